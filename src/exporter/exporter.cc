#include "exporter/exporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <future>
#include <iterator>

#include "core/clock.h"
#include "exporter/attribution_cache.h"
#include "exporter/health.h"
#include "exporter/json_api.h"
#include "exporter/landing.h"
#include "exporter/pod_usage.h"
#include "exporter/self_metrics.h"
#include "exporter/ui_assets.h"
#include "net/event_stream.h"
#include "net/http_util.h"
#include "prom/writer.h"

namespace gpulse::exporter {
namespace {

constexpr const char* kJson = "application/json";

void Log(const std::string& line) { fmt::print(stderr, "gpulse exporter: {}\n", line); }

// The live page loads nothing from anywhere else and runs no inline script (docs/live.md).
constexpr const char* kUiPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

bool IsOwnPath(const std::string& path) {
  static const char* const kOwn[] = {
      "/metrics",      "/health", "/api/v1/snapshot", "/api/v1/devices", "/api/v1/stream",
      "/api/v1/frame", "/"};
  return std::find(std::begin(kOwn), std::end(kOwn), path) != std::end(kOwn) ||
         FindUiAsset(path) != nullptr;
}

}  // namespace

Result<std::shared_ptr<const CounterSet>> LoadCounterSet(const ExporterOptions& options) {
  if (options.counters_file.empty()) return std::make_shared<const CounterSet>(DefaultCounters());
  auto set = LoadCounters(options.counters_file);
  if (!set) return set.error();
  for (const std::string& w : set->warnings) Log(w);
  return std::make_shared<const CounterSet>(std::move(set).value());
}

namespace {

// Whether a read needs its processes' procfs facts: Kubernetes mode with an answer, or Slurm mode.
bool WantsProcesses(const Snapshot* snap, const k8s::PodState* state, const ExporterOptions& o) {
  return snap != nullptr && !snap->processes.empty() &&
         ((state != nullptr && state->ok) || o.slurm_jobs);
}

std::optional<sys::RootedFs> ProcRoot(const ExporterOptions& options) {
  if (!options.procfs_root) return std::nullopt;
  return sys::RootedFs(*options.procfs_root);
}

// `snap` with `a`, its power apportioned from this read (and integrated into `energy`, when
// given). A snapshot nobody else holds yet is completed in place, else copied.
std::shared_ptr<const Snapshot> Annotate(std::shared_ptr<const Snapshot> snap, const Attribution& a,
                                         Integrators* energy) {
  std::shared_ptr<Snapshot> out = snap.use_count() == 1 ? std::const_pointer_cast<Snapshot>(snap)
                                                        : std::make_shared<Snapshot>(*snap);
  out->pod_usage = a.pods;
  out->job_usage = a.jobs;
  out->job_labels = a.job_labels;
  ApplyPower(out->pod_usage, *out);
  ApplyPower(out->job_usage, *out);
  if (energy != nullptr) {
    energy->pods.Integrate(out->pod_usage, out->start_mono_ns);
    energy->jobs.Integrate(out->job_usage, out->start_mono_ns);
  }
  return out;
}

PodLabels LabelsOf(const k8s::PodState& state) {
  PodLabels labels = RenderPodLabels(state.assignments);
  labels.up = state.ok;
  labels.lists_total = state.lists_total;
  labels.failures_total = state.failures_total;
  return labels;
}

}  // namespace

std::string RenderOnce(gpu::Backend& backend, std::shared_ptr<const CounterSet> counters,
                       const ExporterOptions& options) {
  std::vector<FieldIndex> fields = counters->ReadFields();
  std::vector<Entity> entities = BuildEntities(backend.info());
  backend.PrimeProfiling(fields);  // one read, so it has the profiling fields (waits 100 ms once)
  auto snap = ReadSnapshot(backend, entities, fields, options.kubernetes || options.slurm_jobs);
  std::optional<PodLabels> pods;
  std::shared_ptr<const k8s::PodState> state;
  if (options.kubernetes) {  // one List, on this thread: there is no scrape to keep it off
    k8s::PodResourcesWatcher once(options.kubelet, entities, {}, &Log);
    once.Start();
    state = once.Current();
    pods = LabelsOf(*state);
  }
  if (WantsProcesses(snap.get(), state.get(), options)) {
    AttributionCache once(ProcRoot(options), options.slurm_jobs);
    snap = Annotate(snap, once.Update(backend.info(), entities, *snap, state, MonotonicNowNs()),
                    nullptr);
  }
  if (!options.hpc_job_mapping_dir.empty()) {
    JobMapping mapping(options.hpc_job_mapping_dir, entities, &Log);
    if (Status s = mapping.Check(); !s.ok()) Log(s.error().message);
    snap = mapping.Apply(std::move(snap));
  }
  MetricsPage page(
      backend.info(), std::move(counters),
      {options.hostname, options.version, options.commit, options.replace_blanks_in_model_name,
       options.devices, options.use_old_namespace});
  std::string out;
  page.Render(*snap, MonotonicNowNs(), out, pods ? &*pods : nullptr);
  return out;
}

Exporter::Exporter(ExporterOptions options, std::unique_ptr<gpu::Backend> backend)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      entities_(BuildEntities(backend_->info())),
      attribution_(ProcRoot(options_), options_.slurm_jobs) {}

// The hub stops first (its thread reads through the probe), then the probe finishes its read and
// answers its callers, which may still ask the hub for its metrics: the hub goes last.
Exporter::~Exporter() {
  if (extension_ != nullptr) extension_->SetStaleHook({});
  if (hub_) hub_->Stop();
  probe_.reset();
  hub_.reset();
  kubelet_.reset();
  if (reload_thread_.joinable()) reload_thread_.join();
}

Result<std::unique_ptr<Exporter>> Exporter::Create(ExporterOptions options,
                                                   std::unique_ptr<gpu::Backend> backend,
                                                   std::shared_ptr<const CounterSet> counters,
                                                   Extension* extension) {
  net::ServerOptions so;
  so.unix_socket_path = options.unix_socket_path;
  so.unix_socket_mode = options.unix_socket_mode;
  so.unix_socket_gid = options.unix_socket_gid;
  so.allow_writes = options.allow_writes;
  so.max_body_bytes = options.max_body_bytes;
  so.address = options.address;
  so.max_connections = options.max_connections;
  so.max_connections_per_peer = options.max_connections_per_peer;
  if (!options.web_config_file.empty()) {
    auto web = net::LoadWebConfig(options.web_config_file);
    if (!web) return web.error();
    so.web = std::move(web).value();
    so.web_config_file = options.web_config_file;
  }
  so.log = [](const std::string& what) { Log(what); };
  std::unique_ptr<Exporter> e(new Exporter(std::move(options), std::move(backend)));
  e->extension_ = extension;
  if (!e->options_.hpc_job_mapping_dir.empty()) {
    e->job_mapping_ =
        std::make_unique<JobMapping>(e->options_.hpc_job_mapping_dir, e->entities_, &Log);
    if (Status s = e->job_mapping_->Check(); !s.ok()) return s.error();
  }
  e->Install(std::move(counters));
  Exporter* self = e.get();
  auto server =
      net::Server::Create(std::move(so), [self](const net::HttpRequest& req, net::Respond respond) {
        self->Handle(req, std::move(respond));
      });
  if (!server) return server.error();
  e->server_ = std::move(server).value();
  e->probe_ = std::make_unique<Probe>(
      [self] { return self->ReadNow(); }, e->options_.min_refresh_ms * 1'000'000, &MonotonicNowNs,
      [self](std::int64_t now_ns) { return self->BetweenReads(now_ns); });
  if (extension != nullptr) extension->SetStaleHook([self] { self->probe_->Invalidate(); });
  LiveHubOptions live;
  live.interval_ms = e->options_.live_interval_ms;
  live.max_viewers = e->options_.max_viewers;
  live.source = extension != nullptr ? "agent" : "exporter";
  live.hostname = e->options_.hostname.value_or("");
  live.min_refresh_ms = e->options_.min_refresh_ms;
  std::optional<sys::RootedFs> proc;
  if (e->options_.procfs_root) proc.emplace(*e->options_.procfs_root);
  e->hub_ = std::make_unique<LiveHub>(live, e->backend_->info(), e->entities_, std::move(proc),
                                      [self] { return self->ReadForLive(); });
  if (e->options_.kubernetes) e->StartKubelet();
  e->server_->OnSignal(SIGHUP, [self] {
    self->Reload();
    self->server_->ReloadWebConfig();
    if (self->kubelet_) self->kubelet_->RefreshNow();
  });
  e->server_->OnSignal(SIGTERM, [self] {
    Log("SIGTERM: draining connections");
    self->server_->Shutdown();
  });
  e->server_->OnSignal(SIGINT, [self] { self->server_->Shutdown(); });
  return e;
}

std::string Exporter::unix_socket_path() const { return server_->unix_socket_path(); }

std::string Exporter::url() const {
  return std::string(server_->tls() ? "https://" : "http://") + server_->local_address();
}

void Exporter::Run() {
  const SystemInfo& info = backend_->info();
  std::string what =
      fmt::format("{} GPU{}", info.devices.size(), info.devices.size() == 1 ? "" : "s");
  if (info.simulated) what += " (simulated: scenario " + info.scenario + ")";
  for (const SkippedDevice& s : info.skipped) {
    Log(fmt::format("GPU {} {}: {}", s.index, s.lost ? "lost" : "skipped", s.reason));
  }
  Log(fmt::format("serving {}, {} counters from {}, on {}/metrics", what,
                  page()->counters().counters.size(), page()->counters().origin, url()));
  if (!unix_socket_path().empty()) Log("management API also on unix://" + unix_socket_path());
  server_->Run();
  Log("stopped");
}

void Exporter::Install(std::shared_ptr<const CounterSet> counters) {
  auto fields = counters->ReadFields();
  auto page = std::make_shared<const MetricsPage>(
      backend_->info(), std::move(counters),
      PageOptions{options_.hostname, options_.version, options_.commit,
                  options_.replace_blanks_in_model_name, options_.devices,
                  options_.use_old_namespace});
  std::lock_guard lock(mu_);
  page_ = std::move(page);
  fields_ = std::move(fields);
}

void Exporter::StartKubelet() {
  auto on_update = [this](std::shared_ptr<const k8s::PodState> state) {
    auto labels = std::make_shared<PodLabels>(LabelsOf(*state));
    std::lock_guard lock(pods_mu_);
    pod_labels_ = std::move(labels);
    pod_state_ = std::move(state);
  };
  kubelet_ = std::make_unique<k8s::PodResourcesWatcher>(options_.kubelet, entities_,
                                                        std::move(on_update), &Log);
  kubelet_->Start();
}

std::shared_ptr<const PodLabels> Exporter::pod_labels() const {
  std::lock_guard lock(pods_mu_);
  return pod_labels_;
}

std::shared_ptr<const Snapshot> Exporter::AddUsage(std::shared_ptr<const Snapshot> snap) {
  std::shared_ptr<const k8s::PodState> state;
  {
    std::lock_guard lock(pods_mu_);
    state = pod_state_;
  }
  if (!WantsProcesses(snap.get(), state.get(), options_)) {
    // No usage this read (no answer from the kubelet, no process): every holder's counter is
    // forgotten, so a gap is never integrated across.
    std::vector<HolderUsage> none;
    if (snap != nullptr) energy_.pods.Integrate(none, snap->start_mono_ns);
    if (snap != nullptr) energy_.jobs.Integrate(none, snap->start_mono_ns);
    return snap;
  }
  // Who holds what is worked out again only when it can have changed (attribution_cache.h);
  // every new process list apportions its own numbers.
  const Attribution& a =
      attribution_.Update(backend_->info(), entities_, *snap, std::move(state), MonotonicNowNs());
  return Annotate(std::move(snap), a, &energy_);
}

std::shared_ptr<const MetricsPage> Exporter::page() const {
  std::lock_guard lock(mu_);
  return page_;
}

// While anyone watches the live views, every read also takes their fields and the processes, so
// a scrape and a frame share one read.
std::shared_ptr<const Snapshot> Exporter::ReadNow() {
  std::vector<FieldIndex> fields;
  {
    std::lock_guard lock(mu_);
    fields = fields_;
  }
  const bool live = hub_ != nullptr && hub_->active();
  if (live) {
    for (FieldIndex f : LiveFields())
      if (std::find(fields.begin(), fields.end(), f) == fields.end()) fields.push_back(f);
  }
  const bool processes = live || options_.kubernetes || options_.slurm_jobs;
  last_read_ns_ = MonotonicNowNs();
  auto snap = extension_ != nullptr ? extension_->Read(fields, processes)
                                    : ReadSnapshot(*backend_, entities_, fields, processes);
  if (snap != nullptr) NoteListed(*snap);
  snap = AddUsage(std::move(snap));
  // The mapping directory is looked at again with every read (as dcgm-exporter does per scrape):
  // a prolog's or epilog's change shows in the next read.
  if (job_mapping_) snap = job_mapping_->Apply(std::move(snap));
  return snap;
}

// The newest list's time: once it is a second old, every GPU's list is due and one pass takes them
// all (the oldest would have the pass find the GPUs listed just after it not yet due).
void Exporter::NoteListed(const Snapshot& snap) {
  std::int64_t newest = 0;
  for (const ProcessList& l : snap.processes) newest = std::max(newest, l.t_mono_ns);
  if (newest > 0) processes_listed_ns_ = newest;
}

std::optional<std::int64_t> Exporter::BetweenReads(std::int64_t now_ns) {
  if (extension_ != nullptr || !(options_.kubernetes || options_.slurm_jobs)) return std::nullopt;
  auto due = NextListingBetweenReads(now_ns, last_read_ns_, processes_listed_ns_);
  if (!due || now_ns < *due) return due;
  Snapshot lists;
  ReadProcesses(*backend_, lists);
  NoteListed(lists);
  std::shared_ptr<const k8s::PodState> state;
  {
    std::lock_guard lock(pods_mu_);
    state = pod_state_;
  }
  // The holders the next read would work out (those due before the lists are again) are worked
  // out here; that read then only apportions its own numbers.
  if (WantsProcesses(&lists, state.get(), options_)) {
    attribution_.Update(backend_->info(), entities_, lists, std::move(state), MonotonicNowNs(),
                        gpu::kProcessListMinIntervalNs);
  }
  return NextListingBetweenReads(now_ns, last_read_ns_, processes_listed_ns_);
}

std::shared_ptr<const Snapshot> Exporter::ReadForLive() {
  auto promise = std::make_shared<std::promise<std::shared_ptr<const Snapshot>>>();
  auto answer = promise->get_future();
  probe_->Get([promise](std::shared_ptr<const Snapshot> s) { promise->set_value(std::move(s)); });
  return answer.get();
}

void Exporter::Reload() {
  std::lock_guard lock(reload_mu_);
  if (reloading_) {
    reload_again_ = true;
    return;
  }
  reloading_ = true;
  if (reload_thread_.joinable()) reload_thread_.join();  // the previous one has finished
  reload_thread_ = std::thread([this] {
    for (;;) {
      ReloadNow();
      std::lock_guard l(reload_mu_);
      if (!reload_again_) {
        reloading_ = false;
        return;
      }
      reload_again_ = false;
    }
  });
}

void Exporter::ReloadNow() {
  if (options_.counters_file.empty()) {
    Log("SIGHUP: no counters file (-f) to reload; serving the built-in default");
    return;
  }
  auto set = LoadCounterSet(options_);
  if (!set) {
    Log("reload failed, still serving the previous counters: " + set.error().message);
    return;
  }
  const std::size_t n = (*set)->counters.size();
  Install(std::move(set).value());  // before the log line: whoever reads it scrapes the new set
  Log(fmt::format("reloaded {}: {} counters", options_.counters_file, n));
}

void Exporter::Handle(const net::HttpRequest& req, net::Respond respond) {
  const bool read = req.method == "GET" || req.method == "HEAD";
  const bool own = IsOwnPath(req.path);
  if (own && !read) {
    net::HttpResponse r = net::TextResponse(405, req.path + " is read-only: use GET");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return respond(std::move(r));
  }
  if (!own && extension_ != nullptr && extension_->Handle(req, respond)) return;
  if (req.path == "/metrics") return ServeMetrics(req.accepts_gzip, std::move(respond));
  if (req.path == "/health") return ServeHealth(std::move(respond));
  if (req.path == "/api/v1/snapshot") return ServeSnapshot(std::move(respond));
  if (req.path == "/api/v1/stream") return ServeStream(req, std::move(respond));
  if (req.path == "/api/v1/frame") return ServeFrame(std::move(respond));
  if (const UiAsset* asset = FindUiAsset(req.path)) {
    net::HttpResponse r;
    r.content_type = std::string(asset->content_type);
    r.body = std::string(asset->body);
    r.compressible = true;
    r.headers.emplace_back("Content-Security-Policy", kUiPolicy);
    r.headers.emplace_back("Cache-Control", "no-cache");
    return respond(std::move(r));
  }
  if (req.path == "/api/v1/devices") {
    net::HttpResponse r;
    r.content_type = kJson;
    r.body = DevicesJson(backend_->info(), entities_, probe_->Latest().get());
    return respond(std::move(r));
  }
  if (req.path == "/") {
    net::HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = LandingPage(backend_->info(), options_.version);
    return respond(std::move(r));
  }
  respond(net::TextResponse(
      404, "not found: try /metrics, /health, /ui, /api/v1/devices, /api/v1/snapshot"));
}

void Exporter::ServeStream(const net::HttpRequest& req, net::Respond respond) {
  net::HttpResponse r;
  r.content_type = "text/event-stream; charset=utf-8";
  if (req.method == "HEAD") {  // the head only: not a viewer, no read
    r.stream = std::make_shared<net::EventStream>(1);
    r.stream->Close();
    return respond(std::move(r));
  }
  auto stream = hub_->Subscribe();
  if (!stream) {
    net::HttpResponse refused = net::TextResponse(503, stream.error().message);
    refused.headers.emplace_back("Retry-After", "5");
    return respond(std::move(refused));
  }
  r.stream = std::move(stream).value();
  respond(std::move(r));
}

void Exporter::ServeFrame(net::Respond respond) {
  hub_->FrameNow([respond](std::shared_ptr<const std::string> frame) {
    if (!frame) return respond(net::TextResponse(503, "no device read"));
    net::HttpResponse r;
    r.content_type = kJson;
    r.compressible = true;
    r.body = *frame + "\n";
    respond(std::move(r));
  });
}

void Exporter::ServeMetrics(bool gzip, net::Respond respond) {
  probe_->Get([this, gzip, respond = std::move(respond)](std::shared_ptr<const Snapshot> snap) {
    net::HttpResponse r;
    r.content_type = std::string(prom::kContentType);
    r.compressible = true;
    std::string tail = snap ? snap->extension_exposition : std::string();
    tail += hub_->Exposition();
    tail += RenderSelfMetrics(sys::ReadProcessStats(), server_->stats());
    // A client that takes gzip gets the kept body's compressed pieces (page_cache.h); should zlib
    // fail, the server compresses the whole body as for any other answer.
    if (gzip && snap) {
      r.gzipped = page_cache_
                      .RenderGzip(page(), snap, pod_labels(), MonotonicNowNs(), tail,
                                  net::kDefaultGzipLevel, r.body)
                      .ok();
      if (r.gzipped) return respond(std::move(r));
      r.body.clear();
    }
    if (snap) page_cache_.Render(page(), snap, pod_labels(), MonotonicNowNs(), r.body);
    r.body += tail;
    respond(std::move(r));
  });
}

void Exporter::ServeHealth(net::Respond respond) {
  const std::int64_t limit = options_.staleness_ms * 1'000'000;
  auto answer = [this, limit, respond](const Snapshot* snap,
                                       std::optional<std::int64_t> in_flight) {
    HealthVerdict v =
        EvaluateHealth(backend_->info(), entities_, snap, MonotonicNowNs(), limit, in_flight);
    if (v.healthy && snap != nullptr && !snap->extension_health_failure.empty()) {
      v = {false, snap->extension_health_failure};
    }
    respond(net::TextResponse(v.healthy ? 200 : 503, v.reason));
  };
  if (auto since = probe_->InFlightSinceNs(); since && MonotonicNowNs() - *since > limit) {
    return answer(probe_->Latest().get(),
                  since);  // a read is stuck: say so instead of waiting on it
  }
  probe_->Get([answer](std::shared_ptr<const Snapshot> snap) { answer(snap.get(), std::nullopt); });
}

void Exporter::ServeSnapshot(net::Respond respond) {
  probe_->Get([this, respond = std::move(respond)](std::shared_ptr<const Snapshot> snap) {
    if (!snap) return respond(net::TextResponse(503, "no device read"));
    net::HttpResponse r;
    r.content_type = kJson;
    r.compressible = true;
    r.body = SnapshotJson(backend_->info(), entities_, page()->counters(), *snap, MonotonicNowNs(),
                          UnixNowNs());
    respond(std::move(r));
  });
}

}  // namespace gpulse::exporter
