// The pod-resources client (src/k8s/pod_resources_client.h) against an in-process gRPC server on a
// unix socket: one channel kept across Lists, dropped after a failed call, and a kubelet restarted
// at the same path found by the next List.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "k8s/pod_resources_client.h"
#include "podresources_v1.grpc.pb.h"

namespace gpulse::k8s {
namespace {

// A kubelet whose List answers one pod holding GPU-0.
class Kubelet final : public ::v1::PodResourcesLister::Service {
 public:
  Kubelet(const std::string& path, std::string pod) : pod_(std::move(pod)) {
    ::unlink(path.c_str());
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~Kubelet() override { server_->Shutdown(); }
  bool up() const { return server_ != nullptr; }

  grpc::Status List(grpc::ServerContext*, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* answer) override {
    ::v1::PodResources* p = answer->add_pod_resources();
    p->set_name(pod_);
    p->set_namespace_("ml");
    ::v1::ContainerResources* c = p->add_containers();
    c->set_name("main");
    ::v1::ContainerDevices* d = c->add_devices();
    d->set_resource_name("nvidia.com/gpu");
    d->add_device_ids("GPU-0");
    return grpc::Status::OK;
  }

 private:
  std::string pod_;
  std::unique_ptr<grpc::Server> server_;
};

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpulse-k8s-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    options_.socket_path = dir_ + "/kubelet.sock";
    options_.timeout = std::chrono::seconds(20);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string PodOf(const Result<std::vector<identity::PodResources>>& r) {
    return r.ok() && r->size() == 1 ? (*r)[0].name : "";
  }

  std::string dir_;
  ListOptions options_;
};

TEST_F(ClientTest, KeepsOneChannelAcrossListsAndReopensAfterAFailure) {
  PodResourcesClient client(options_);
  auto first = std::make_unique<Kubelet>(options_.socket_path, "train-0");
  ASSERT_TRUE(first->up());
  EXPECT_EQ(PodOf(client.List()), "train-0");
  EXPECT_EQ(PodOf(client.List()), "train-0");
  EXPECT_EQ(client.channels_opened(), 1u);

  first.reset();  // the kubelet restarts: nobody listens, then a new one at the same path
  auto down = client.List();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  Kubelet second(options_.socket_path, "train-1");
  ASSERT_TRUE(second.up());
  EXPECT_EQ(PodOf(client.List()), "train-1");
  EXPECT_EQ(client.channels_opened(), 2u) << "the failed call dropped its channel";
}

TEST_F(ClientTest, NoSocketIsUnavailableWithoutOpeningAChannel) {
  PodResourcesClient client(options_);
  auto r = client.List();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("kubelet.sock"), std::string::npos);
  EXPECT_EQ(client.channels_opened(), 0u);
}

}  // namespace
}  // namespace gpulse::k8s
