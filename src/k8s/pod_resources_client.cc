#include "k8s/pod_resources_client.h"

#include <fmt/format.h>
#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "podresources_v1.grpc.pb.h"

namespace gpulse::k8s {
namespace {

// A pod with its containers' devices of the resources `keep` accepts; containers left without a
// device are dropped (a node's thousands of CPU-only pods then cost a name each).
identity::PodResources Convert(const ::v1::PodResources& p, const ListOptions& options) {
  identity::PodResources pod{p.name(), p.namespace_(), {}};
  for (const ::v1::ContainerResources& c : p.containers()) {
    identity::ContainerResources container{c.name(), {}};
    for (const ::v1::ContainerDevices& d : c.devices()) {
      if (options.keep_resource && !options.keep_resource(d.resource_name())) continue;
      container.devices.push_back(
          {d.resource_name(),
           std::vector<std::string>(d.device_ids().begin(), d.device_ids().end())});
    }
    if (!container.devices.empty()) pod.containers.push_back(std::move(container));
  }
  return pod;
}

// The answer's arena takes its blocks straight from mmap and gives them back with munmap: a node's
// thousands of pods are megabytes of blocks, and from malloc they would stay in the heap after the
// answer is gone (or need a malloc_trim, which locks every thread's heap while it walks it).
void* MapBlock(std::size_t n) {
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}
void UnmapBlock(void* p, std::size_t n) { ::munmap(p, n); }

}  // namespace

Status CheckKubeletSocket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();  // absent: the kubelet may come later
  if (!S_ISSOCK(st.st_mode)) {
    return InvalidArgument(fmt::format(
        "--pod-resources-kubelet-socket {}: not a unix socket (mount the kubelet's "
        "pod-resources directory, /var/lib/kubelet/pod-resources, and name kubelet.sock in it)",
        path));
  }
  return Status::Ok();
}

struct PodResourcesClient::Channel {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<::v1::PodResourcesLister::Stub> stub;
};

PodResourcesClient::PodResourcesClient(ListOptions options) : options_(std::move(options)) {}
PodResourcesClient::~PodResourcesClient() = default;

Result<std::vector<identity::PodResources>> PodResourcesClient::List() {
  struct stat st {};
  if (::stat(options_.socket_path.c_str(), &st) != 0) {
    channel_.reset();
    return Unavailable(
        fmt::format("kubelet socket {}: {}", options_.socket_path, std::strerror(errno)));
  }
  if (channel_ == nullptr) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options_.max_receive_bytes);
    channel_ = std::make_unique<Channel>();
    channel_->channel = grpc::CreateCustomChannel("unix:" + options_.socket_path,
                                                  grpc::InsecureChannelCredentials(), args);
    channel_->stub = ::v1::PodResourcesLister::NewStub(channel_->channel);
    ++channels_opened_;
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.timeout);
  ::v1::ListPodResourcesRequest request;
  // The answer is parsed into an arena: a node's thousands of pods are tens of thousands of small
  // messages and strings, and one malloc each was 40% of a List's CPU at 5,000 pods
  // (bench/RESULTS.md, issue 20). The arena starts at 1 MiB and is unmapped at once on return.
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = 1 << 20;
  arena_options.max_block_size = 8 << 20;
  arena_options.block_alloc = MapBlock;
  arena_options.block_dealloc = UnmapBlock;
  google::protobuf::Arena arena(arena_options);
  auto& response = *google::protobuf::Arena::CreateMessage<::v1::ListPodResourcesResponse>(&arena);
  grpc::Status status = channel_->stub->List(&context, request, &response);
  if (!status.ok()) {
    channel_.reset();
    std::string what = fmt::format("kubelet {} List: {} (gRPC code {})", options_.socket_path,
                                   status.error_message(), static_cast<int>(status.error_code()));
    if (status.error_code() == grpc::StatusCode::INTERNAL ||
        status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return InvalidArgument(what);
    }
    return Unavailable(what);
  }
  std::vector<identity::PodResources> pods;
  pods.reserve(static_cast<std::size_t>(response.pod_resources_size()));
  for (const ::v1::PodResources& p : response.pod_resources()) pods.push_back(Convert(p, options_));
  return pods;
}

Result<std::vector<identity::PodResources>> ListPodResources(const ListOptions& options) {
  return PodResourcesClient(options).List();
}

}  // namespace gpulse::k8s
