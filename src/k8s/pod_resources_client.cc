#include "k8s/pod_resources_client.h"

#include <fmt/format.h>
#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

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

Result<std::vector<identity::PodResources>> ListPodResources(const ListOptions& options) {
  struct stat st {};
  if (::stat(options.socket_path.c_str(), &st) != 0) {
    return Unavailable(
        fmt::format("kubelet socket {}: {}", options.socket_path, std::strerror(errno)));
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_bytes);
  auto channel = grpc::CreateCustomChannel("unix:" + options.socket_path,
                                           grpc::InsecureChannelCredentials(), args);
  auto stub = ::v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options.timeout);
  ::v1::ListPodResourcesRequest request;
  // The answer is parsed into an arena: a node's thousands of pods are tens of thousands of small
  // messages and strings, and one malloc each was 40% of a List's CPU at 5,000 pods
  // (bench/RESULTS.md, issue 20). The arena starts at 1 MiB and is freed at once on return.
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = 1 << 20;
  arena_options.max_block_size = 8 << 20;
  google::protobuf::Arena arena(arena_options);
  auto& response = *google::protobuf::Arena::CreateMessage<::v1::ListPodResourcesResponse>(&arena);
  grpc::Status status = stub->List(&context, request, &response);
  if (!status.ok()) {
    std::string what = fmt::format("kubelet {} List: {} (gRPC code {})", options.socket_path,
                                   status.error_message(), static_cast<int>(status.error_code()));
    if (status.error_code() == grpc::StatusCode::INTERNAL ||
        status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return InvalidArgument(what);
    }
    return Unavailable(what);
  }
  std::vector<identity::PodResources> pods;
  pods.reserve(static_cast<std::size_t>(response.pod_resources_size()));
  for (const ::v1::PodResources& p : response.pod_resources()) pods.push_back(Convert(p, options));
  return pods;
}

}  // namespace gpulse::k8s
