// `gpulse exporter`: serves the GPUs of one backend to Prometheus, dcgm-exporter compatible.
//
//   HTTP loop thread (net::Server)  --Get-->  CoalescedProbe thread (sole owner of the backend)
//        ^                                         | one read per --min-refresh-ms, shared
//        +---------- Respond (posted) <------------+ render /metrics, /health, JSON
//
// Devices are read when scraped, never on a timer; concurrent scrapes share one read. SIGHUP
// reloads the counters file (a bad file keeps the previous set); SIGTERM and SIGINT drain and
// return.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "exporter/attribution_cache.h"
#include "exporter/counters.h"
#include "exporter/exposition.h"
#include "exporter/hpc_job_mapping.h"
#include "exporter/live_hub.h"
#include "exporter/page_cache.h"
#include "exporter/pod_usage.h"
#include "exporter/snapshot.h"
#include "gpu/backend.h"
#include "k8s/pod_resources_watcher.h"
#include "net/http_types.h"
#include "net/server.h"
#include "sampling/coalesced_probe.h"

namespace gpulse::exporter {

// What the node agent (src/agent) adds to the exporter: routes of its own, and the device reads
// (the agent's worker owns the backend then, so its watches and the scrapes share one reader).
// Both are called from the exporter's threads and must be thread-safe.
class Extension {
 public:
  virtual ~Extension() = default;
  // Takes a request the exporter does not serve itself (e.g. /api/v1/groups); false: not ours.
  virtual bool Handle(const net::HttpRequest& req, net::Respond& respond) = 0;
  // Reads `fields` of every entity (and the GPU processes when `processes`), on the probe thread;
  // may block until the reader answers.
  virtual std::shared_ptr<const Snapshot> Read(std::span<const FieldIndex> fields,
                                               bool processes) = 0;
  // The exporter hands over, before it serves, what to call when the readings changed outside a
  // read (the agent's simulated clock moved), so that the next scrape reads again instead of
  // taking a snapshot of the past; and an empty function before it goes.
  virtual void SetStaleHook(std::function<void()> stale) { (void)stale; }
};

struct ExporterOptions {
  std::string address = ":9400";
  std::string counters_file;  // "" = the built-in default set
  std::int64_t min_refresh_ms = 100;
  std::int64_t staleness_ms = 5000;  // /health: the oldest acceptable read
  std::optional<std::string> hostname;
  std::string web_config_file;  // "" = plain HTTP, no auth
  std::size_t max_connections = 2048;
  std::size_t max_connections_per_peer = 256;
  std::string version;
  std::string commit;
  bool replace_blanks_in_model_name = false;  // dcgm-exporter's --replace-blanks-in-model-name
  DeviceSelection devices;                    // dcgm-exporter's -d
  bool use_old_namespace = false;             // dcgm-exporter's -o
  // The agent's: a unix socket beside the TCP address, and writes (POST, PUT, DELETE) allowed.
  std::string unix_socket_path;
  unsigned unix_socket_mode = 0660;
  std::optional<unsigned> unix_socket_gid;
  bool allow_writes = false;
  std::size_t max_body_bytes = 4 * 1024;
  // The live views (/ui, /api/v1/stream, /api/v1/frame; docs/live.md).
  std::int64_t live_interval_ms = 1000;
  std::size_t max_viewers = 128;
  std::optional<std::string> procfs_root;  // processes are attributed from it; nullopt: anonymous
  // Kubernetes mode (dcgm-exporter's -k): pod, namespace and container labels from the kubelet's
  // pod-resources API, listed by a watcher thread, never on the scrape path (ADR 0021).
  bool kubernetes = false;
  k8s::WatcherOptions kubelet;
  // Slurm mode: series labelled hpc_job with the Slurm jobs whose processes use the device, from
  // their cgroups (hpc_jobs.h). Not with `kubernetes`.
  bool slurm_jobs = false;
  // dcgm-exporter's --hpc-job-mapping-dir: series labelled hpc_job from the files a Slurm prolog
  // writes there, read at every device read (hpc_job_mapping.h). "": off. Not with `slurm_jobs`.
  std::string hpc_job_mapping_dir;
};

// Loads the counters file named by the options (or the default); warnings go to stderr.
Result<std::shared_ptr<const CounterSet>> LoadCounterSet(const ExporterOptions& options);

// One exposition of one read, without a server (`--once`).
std::string RenderOnce(gpu::Backend& backend, std::shared_ptr<const CounterSet> counters,
                       const ExporterOptions& options);

class Exporter {
 public:
  // Binds the address (the first scrape can come as soon as this returns). Errors: InvalidArgument
  // for a bad web config or address; Unavailable when the address cannot be bound.
  // With `extension`, reads go through it and requests the exporter does not serve go to it; it
  // must outlive the Exporter.
  static Result<std::unique_ptr<Exporter>> Create(ExporterOptions options,
                                                  std::unique_ptr<gpu::Backend> backend,
                                                  std::shared_ptr<const CounterSet> counters,
                                                  Extension* extension = nullptr);
  ~Exporter();

  std::string url() const;               // e.g. "http://127.0.0.1:9400"
  std::string unix_socket_path() const;  // "" when none
  const std::vector<Entity>& entities() const { return entities_; }

  // Serves until SIGTERM or SIGINT, then drains and returns.
  void Run();

 private:
  using Probe = sampling::CoalescedProbe<Snapshot>;

  Exporter(ExporterOptions options, std::unique_ptr<gpu::Backend> backend);
  void Handle(const net::HttpRequest& req, net::Respond respond);
  void ServeMetrics(bool gzip, net::Respond respond);
  void ServeHealth(net::Respond respond);
  void ServeSnapshot(net::Respond respond);
  void ServeStream(const net::HttpRequest& req, net::Respond respond);
  void ServeFrame(net::Respond respond);
  std::shared_ptr<const Snapshot> ReadForLive();  // through the probe; on the hub's thread
  void Reload();     // SIGHUP, on the loop: starts or queues a reload on the reload thread
  void ReloadNow();  // reads and installs the counters file; on the reload thread
  void Install(std::shared_ptr<const CounterSet> counters);
  std::shared_ptr<const MetricsPage> page() const;
  std::shared_ptr<const Snapshot> ReadNow();
  std::shared_ptr<const Snapshot> AddUsage(std::shared_ptr<const Snapshot> snap);
  // The probe's work between reads (CoalescedProbe's `between`): in Kubernetes and Slurm modes,
  // while reads come at least once per gpu::kProcessListMinIntervalNs, the GPUs' process lists
  // are listed and attributed here when they fall due, so that no scrape's read waits for the
  // driver's process calls, procfs or the holders (bench/RESULTS.md, issue 20). When reads are
  // rarer, each read lists the processes itself and nothing runs between reads: nothing is read
  // for no one. Returns when to run next.
  std::optional<std::int64_t> BetweenReads(std::int64_t now_ns);
  void NoteListed(const Snapshot& snap);  // when snap's process lists were taken
  void StartKubelet();  // Kubernetes mode: the first List, then the watcher's thread
  std::shared_ptr<const PodLabels> pod_labels() const;

  ExporterOptions options_;
  std::unique_ptr<gpu::Backend> backend_;
  Extension* extension_ = nullptr;
  const std::vector<Entity> entities_;  // BuildEntities(backend_->info()), fixed at open
  mutable std::mutex mu_;               // guards page_ and fields_
  std::shared_ptr<const MetricsPage> page_;
  PageCache page_cache_;  // the /metrics body of the last read
  std::vector<FieldIndex> fields_;
  std::unique_ptr<net::Server> server_;
  // A reload reads a file (which may be slow, or a FIFO an operator planted): never on the loop.
  std::mutex reload_mu_;  // guards reloading_ and reload_again_
  bool reloading_ = false;
  bool reload_again_ = false;     // a SIGHUP came while a reload ran: one more after it
  std::thread reload_thread_;     // joined by the destructor (and before the next one starts)
  mutable std::mutex pods_mu_;    // guards pod_labels_ and pod_state_
  std::shared_ptr<const PodLabels> pod_labels_;        // Kubernetes mode: the last answer's
  std::shared_ptr<const k8s::PodState> pod_state_;     // likewise, for the per-pod usage
  std::unique_ptr<k8s::PodResourcesWatcher> kubelet_;  // destroyed after probe_ (see ~Exporter)
  AttributionCache attribution_;  // the probe thread's own: who holds which listed process
  // The probe thread's own: when the last read started, and when the newest of the process lists
  // it has seen was taken (0: none yet).
  std::int64_t last_read_ns_ = 0;
  std::int64_t processes_listed_ns_ = 0;
  Integrators energy_;  // the probe thread's own: per-pod and per-job energy counters
  std::unique_ptr<JobMapping> job_mapping_;  // the probe thread's own; null without the directory
  std::unique_ptr<Probe> probe_;  // destroyed after hub_: its thread reads backend_, posts to server_
  std::unique_ptr<LiveHub> hub_;  // destroyed first: its thread reads through probe_
};

}  // namespace gpulse::exporter
