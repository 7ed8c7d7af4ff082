#include "k8s/pod_resources_client.h"

#include <fmt/format.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "k8s/pod_resources_wire.h"

namespace gpulse::k8s {
namespace {

constexpr const char* kListMethod = "/v1.PodResourcesLister/List";

// The List call on the kept channel, its request empty (ListPodResourcesRequest has no fields), its
// answer the bytes as they came; waits for the call to finish.
grpc::Status CallList(grpc::GenericStub& stub, grpc::ClientContext& context,
                      grpc::ByteBuffer& answer) {
  grpc::Slice empty;
  grpc::ByteBuffer request(&empty, 1);
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&context, kListMethod, grpc::StubOptions(), &request, &answer,
                 [&](grpc::Status s) {
                   std::lock_guard lock(mu);
                   status = std::move(s);
                   done = true;
                   done_cv.notify_one();
                 });
  std::unique_lock lock(mu);
  done_cv.wait(lock, [&] { return done; });
  return status;
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

struct PodResourcesClient::Channel {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<grpc::GenericStub> stub;
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
    channel_->stub = std::make_unique<grpc::GenericStub>(channel_->channel);
    ++channels_opened_;
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.timeout);
  grpc::ByteBuffer answer;
  grpc::Status status = CallList(*channel_->stub, context, answer);
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
  // The answer's bytes are read as they are (k8s/pod_resources_wire.h): building its protobuf
  // messages was most of a List's CPU at 5,000 pods (bench/RESULTS.md, issue 20).
  grpc::Slice bytes;
  if (!answer.DumpToSingleSlice(&bytes).ok()) {
    return Unavailable(
        fmt::format("kubelet {} List: the answer could not be read", options_.socket_path));
  }
  auto pods = ReadListResponse({reinterpret_cast<const char*>(bytes.begin()), bytes.size()},
                               options_.keep_resource);
  if (!pods.ok()) {
    return InvalidArgument(
        fmt::format("kubelet {} List: {}", options_.socket_path, pods.error().message));
  }
  return pods;
}

Result<std::vector<identity::PodResources>> ListPodResources(const ListOptions& options) {
  return PodResourcesClient(options).List();
}

}  // namespace gpulse::k8s
