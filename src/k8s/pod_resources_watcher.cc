#include "k8s/pod_resources_watcher.h"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace gpulse::k8s {
namespace {

constexpr std::size_t kTrimAfterPods = 1000;

}  // namespace

bool HeapTrimPolicy::After(std::size_t pods) {
  peak_ = std::max(peak_, pods);
  if (peak_ < kTrimAfterPods || pods >= peak_ / 2) return false;
  peak_ = pods;
  return true;
}

PodResourcesWatcher::PodResourcesWatcher(WatcherOptions options, std::vector<Entity> entities,
                                         OnUpdate on_update, Log log, Lister lister)
    : options_(std::move(options)),
      entities_(std::move(entities)),
      on_update_(std::move(on_update)),
      log_(std::move(log)),
      lister_(std::move(lister)) {
  if (!lister_) {
    ListOptions list = options_.list;
    list.keep_resource = [extra = options_.extra_resources](std::string_view r) {
      return identity::CountedResource(r, extra);
    };
    auto client = std::make_shared<PodResourcesClient>(std::move(list));  // one channel, kept
    lister_ = [client] { return client->List(); };
  }
}

PodResourcesWatcher::~PodResourcesWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PodResourcesWatcher::Start() {
  thread_ = std::thread([this] { Loop(); });
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return listed_once_; });
}

void PodResourcesWatcher::RefreshNow() {
  {
    std::lock_guard lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

std::shared_ptr<const PodState> PodResourcesWatcher::Current() const {
  std::lock_guard lock(mu_);
  return current_;
}

void PodResourcesWatcher::Loop() {
  // Background work: a scrape that needs the CPU while a large answer is received and parsed goes
  // first (Linux applies a nice value per thread). The first List runs here too, so the threads
  // gRPC starts with the channel are this thread's children and inherit its nice value.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
  ListOnce();
  auto last = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  listed_once_ = true;
  cv_.notify_all();
  while (!stop_) {
    cv_.wait_until(lock, last + options_.interval, [this] { return stop_ || wake_; });
    if (stop_) break;
    if (wake_) {  // on demand, but not more often than min_interval
      cv_.wait_until(lock, last + options_.min_interval, [this] { return stop_; });
      if (stop_) break;
    }
    wake_ = false;
    lock.unlock();
    ListOnce();
    last = std::chrono::steady_clock::now();
    lock.lock();
  }
}

void PodResourcesWatcher::ListOnce() {
  auto pods = lister_();
  auto state = std::make_shared<PodState>();
  state->lists_total = ++lists_;
  if (pods) {
    state->ok = true;
    state->assignments =
        identity::AssignPods(entities_, *pods, options_.id_type, options_.extra_resources);
    if (std::exchange(failing_, false)) log_("kubelet pod-resources answers again");
    for (const std::string& id : state->assignments.unmatched) {
      if (logged_unmatched_.insert(id).second) {
        log_(
            fmt::format("kubelet device ID \"{}\" names no GPU or MIG instance of this node "
                        "(--kubernetes-gpu-id-type {}): its pod gets no labels",
                        id, options_.id_type == identity::GpuIdType::kUid ? "uid" : "device-name"));
      }
    }
  } else {
    ++failures_;
    state->error = pods.error().message;
    state->assignments.by_entity.resize(entities_.size());
    if (!std::exchange(failing_, true)) {
      log_(fmt::format("no pod labels until the kubelet answers: {}", state->error));
    }
  }
  state->failures_total = failures_;
  std::shared_ptr<const PodState> done = std::move(state);
  {
    std::lock_guard lock(mu_);
    current_ = done;
  }
  if (on_update_) on_update_(done);
  // An answer of thousands of pods (megabytes) leaves gRPC's receive buffers freed in its threads'
  // heaps, reused by the next List; handed back only when the answers have shrunk (HeapTrimPolicy).
  if (trim_.After(pods ? pods->size() : 0)) malloc_trim(0);
}

}  // namespace gpulse::k8s
