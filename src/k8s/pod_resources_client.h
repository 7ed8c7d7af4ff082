// A client of the kubelet's pod-resources API: PodResourcesLister/List calls over the kubelet's
// unix socket (gRPC), each answer as identity::PodResources. No gRPC type appears here.
//
// Thread-safety: ListPodResources may be called from any thread; each call opens its own channel.
// A PodResourcesClient is one caller's at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "identity/pod_resources.h"

namespace gpulse::k8s {

constexpr const char* kDefaultKubeletSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

struct ListOptions {
  std::string socket_path = kDefaultKubeletSocket;
  std::chrono::milliseconds timeout{10'000};  // dcgm-exporter's
  // gRPC's default receive limit is 4 MiB, which a node with a few thousand pods exceeds
  // (research/dcgm.md section 6 row 6); 64 MiB holds hundreds of thousands of containers.
  int max_receive_bytes = 64 << 20;
  // Which resources' devices to keep from the answer (nullptr: all). Pods are always kept.
  std::function<bool(std::string_view resource)> keep_resource;
};

// Start-up check of the path: kInvalidArgument when it exists and is not a unix socket; Ok when it
// is one or is absent (a kubelet that starts later is picked up by the next refresh).
Status CheckKubeletSocket(const std::string& path);

// Errors: kUnavailable (no socket, the kubelet did not answer in time, or refused the call),
// kInvalidArgument (an answer that is not a ListPodResourcesResponse); the message says which.
Result<std::vector<identity::PodResources>> ListPodResources(const ListOptions& options);

// A List caller that keeps its channel between calls (the exporter's watcher, every few seconds):
// opening a gRPC channel starts threads and a connection, a burst of work on every core that a
// scrape in flight would wait behind. A call that fails drops the channel, so the next one opens a
// fresh connection (a restarted kubelet listens on a new socket at the same path).
class PodResourcesClient {
 public:
  explicit PodResourcesClient(ListOptions options);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // As ListPodResources.
  Result<std::vector<identity::PodResources>> List();
  std::size_t channels_opened() const { return channels_opened_; }

 private:
  struct Channel;
  ListOptions options_;
  std::unique_ptr<Channel> channel_;
  std::size_t channels_opened_ = 0;
};

}  // namespace gpulse::k8s
