// Keeps the kubelet's pod-resources answer fresh off the scrape path: a thread of its own lists the
// pods at start, then every `interval` and whenever RefreshNow asks, and hands each result (the
// containers holding each entity, or why the kubelet did not answer) to `on_update`. A scrape only
// reads the last result: it never waits on the kubelet (docs/adr/0021-pod-attribution.md).
//
// The thread runs at nice 10: parsing a large answer must not delay scrapes on a busy node.
//
// A failed List is a result too (the negative answer is kept until the next refresh, not retried
// per scrape): its assignments are empty, so labels disappear rather than go stale. The first
// failure after a success, each new unmatched device ID and each recovery are logged once.
//
// Thread-safety: RefreshNow, Current and the counters may be called from any thread; on_update runs
// on the watcher's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/entity.h"
#include "identity/pod_resources.h"
#include "k8s/pod_resources_client.h"

namespace gpulse::k8s {

struct PodState {
  identity::PodAssignments assignments;  // empty by_entity entries when the List failed
  bool ok = false;                       // the last List answered
  std::string error;                     // why not
  std::uint64_t lists_total = 0;         // List calls made so far, this one included
  std::uint64_t failures_total = 0;      // of which failed
};

struct WatcherOptions {
  ListOptions list;
  std::chrono::milliseconds interval{5'000};
  std::chrono::milliseconds min_interval{1'000};  // RefreshNow is honoured at most this often
  identity::GpuIdType id_type = identity::GpuIdType::kUid;
  std::vector<std::string> extra_resources;  // --nvidia-resource-names
};

// When to hand the heap freed by an answer back to the system (malloc_trim): only once the answer
// has shrunk to under half the largest since the last trim, that largest being 1,000 pods or more
// (a node that had thousands of pods and now has few). A steady answer's buffers are reused by the
// next List; trimming them after every List made the next one fault them back in, 80% of a
// 5,000-pod List's CPU (bench/RESULTS.md, issue 20). A failed List counts as no pods.
class HeapTrimPolicy {
 public:
  bool After(std::size_t pods);

 private:
  std::size_t peak_ = 0;
};

class PodResourcesWatcher {
 public:
  using Lister = std::function<Result<std::vector<identity::PodResources>>()>;
  using OnUpdate = std::function<void(std::shared_ptr<const PodState>)>;
  using Log = std::function<void(const std::string&)>;

  // `lister` defaults to a PodResourcesClient of options.list, its channel kept between Lists.
  // The first List runs in Start.
  PodResourcesWatcher(WatcherOptions options, std::vector<Entity> entities, OnUpdate on_update,
                      Log log, Lister lister = {});
  ~PodResourcesWatcher();  // stops and joins the thread

  // Starts the thread and returns once its first List has been handed over (so the first scrape
  // has labels).
  void Start();
  // Asks for a List now (at most once per min_interval); returns at once.
  void RefreshNow();
  std::shared_ptr<const PodState> Current() const;

 private:
  void Loop();
  void ListOnce();

  const WatcherOptions options_;
  const std::vector<Entity> entities_;
  OnUpdate on_update_;
  Log log_;
  Lister lister_;
  mutable std::mutex mu_;  // guards current_, wake_, stop_, listed_once_
  std::condition_variable cv_;
  std::shared_ptr<const PodState> current_;
  bool wake_ = false;
  bool stop_ = false;
  bool listed_once_ = false;  // the first List has been handed over (Start waits for it)
  std::thread thread_;
  // The watcher thread's own.
  std::uint64_t lists_ = 0, failures_ = 0;
  bool failing_ = false;
  HeapTrimPolicy trim_;
  std::set<std::string> logged_unmatched_;
};

}  // namespace gpulse::k8s
