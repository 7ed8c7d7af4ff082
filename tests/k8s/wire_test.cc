// The kubelet's List answer read from its wire bytes (src/k8s/pod_resources_wire.h): answers built
// with libprotobuf's generated messages, and bytes written by hand for what a newer kubelet or a
// broken one sends (unknown fields, groups, repeated scalars, truncation, bad UTF-8, deep nesting).
// tests/fuzz/pod_resources.cc compares the reader with libprotobuf on any bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "identity/pod_resources.h"
#include "k8s/pod_resources_wire.h"
#include "podresources_v1.pb.h"

namespace gpulse::k8s {
namespace {

const KeepResource kGpus = [](std::string_view r) { return identity::CountedResource(r); };

// Protobuf wire pieces: a tag, a length-delimited field.
std::string Tag(unsigned number, unsigned type) {
  std::string out;
  unsigned v = number << 3 | type;
  while (v >= 0x80) {
    out += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  return out + static_cast<char>(v);
}
std::string Len(unsigned number, const std::string& bytes) {
  return Tag(number, 2) + static_cast<char>(bytes.size()) + bytes;  // under 128 bytes here
}

::v1::ListPodResourcesResponse TwoPods() {
  ::v1::ListPodResourcesResponse r;
  ::v1::PodResources* train = r.add_pod_resources();
  train->set_name("train-0");
  train->set_namespace_("ml");
  ::v1::ContainerResources* main = train->add_containers();
  main->set_name("main");
  main->add_cpu_ids(3);
  ::v1::ContainerDevices* nic = main->add_devices();
  nic->set_resource_name("example.com/sriov");
  nic->add_device_ids("0000:3b:00.1");
  ::v1::ContainerDevices* gpu = main->add_devices();
  gpu->set_resource_name("nvidia.com/gpu");
  gpu->add_device_ids("GPU-a");
  gpu->add_device_ids("GPU-b");
  gpu->mutable_topology()->add_nodes()->set_id(1);
  ::v1::ContainerResources* sidecar = train->add_containers();
  sidecar->set_name("sidecar");
  ::v1::PodResources* web = r.add_pod_resources();
  web->set_name("web-1");
  web->set_namespace_("default");
  return r;
}

TEST(WireTest, ReadsWhatLibprotobufWrote) {
  auto pods = ReadListResponse(TwoPods().SerializeAsString(), nullptr);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  const identity::PodResources& train = (*pods)[0];
  EXPECT_EQ(train.name, "train-0");
  EXPECT_EQ(train.ns, "ml");
  ASSERT_EQ(train.containers.size(), 1u);  // the sidecar holds no device
  EXPECT_EQ(train.containers[0].name, "main");
  ASSERT_EQ(train.containers[0].devices.size(), 2u);
  EXPECT_EQ(train.containers[0].devices[0].resource_name, "example.com/sriov");
  EXPECT_EQ(train.containers[0].devices[1].resource_name, "nvidia.com/gpu");
  EXPECT_EQ(train.containers[0].devices[1].device_ids,
            (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_EQ((*pods)[1].name, "web-1");
  EXPECT_EQ((*pods)[1].ns, "default");
  EXPECT_TRUE((*pods)[1].containers.empty());
}

TEST(WireTest, KeepsOnlyTheResourcesAskedForAndEveryPod) {
  auto pods = ReadListResponse(TwoPods().SerializeAsString(), kGpus);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  ASSERT_EQ((*pods)[0].containers.size(), 1u);
  ASSERT_EQ((*pods)[0].containers[0].devices.size(), 1u);
  EXPECT_EQ((*pods)[0].containers[0].devices[0].resource_name, "nvidia.com/gpu");
}

TEST(WireTest, AnEmptyAnswerIsNoPods) {
  auto pods = ReadListResponse("", kGpus);
  ASSERT_TRUE(pods.ok());
  EXPECT_TRUE(pods->empty());
}

// A newer kubelet's fields (ContainerResources.memory = 4, dynamic_resources = 5), a field of
// another wire type than declared, a group and fixed-size values: all stepped over, as libprotobuf
// keeps them as unknown fields.
TEST(WireTest, StepsOverFieldsItDoesNotKnow) {
  std::string device =
      Len(1, "nvidia.com/gpu") + Len(2, "GPU-a") + Tag(9, 1) + "12345678" + Tag(10, 5) + "1234";
  std::string container = Len(1, "main") + Len(4, Len(1, "memory") + Tag(2, 0) + "\x80\x01") +
                          Len(2, device) + Len(5, Len(1, "claim")) + Tag(1, 0) + "\x07" +
                          Tag(7, 3) + Tag(1, 0) + "\x01" + Tag(7, 4);
  std::string wire = Len(1, Len(1, "p") + Len(2, "ns") + Len(3, container)) + Tag(2, 0) + "\x05";
  auto pods = ReadListResponse(wire, kGpus);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 1u);
  ASSERT_EQ((*pods)[0].containers.size(), 1u);
  EXPECT_EQ((*pods)[0].containers[0].name, "main");
  EXPECT_EQ((*pods)[0].containers[0].devices[0].device_ids, (std::vector<std::string>{"GPU-a"}));
  ::v1::ListPodResourcesResponse reference;
  ASSERT_TRUE(reference.ParseFromString(wire));  // the bytes are a valid answer
}

// As libprotobuf: the last of a repeated singular field wins (the resource name may even come after
// the ids), repeated fields append.
TEST(WireTest, LastNameWinsAndRepeatedFieldsAppend) {
  std::string device =
      Len(2, "GPU-a") + Len(1, "example.com/nic") + Len(2, "GPU-b") + Len(1, "nvidia.com/gpu");
  std::string pod = Len(1, "old") + Len(3, Len(1, "c") + Len(2, device)) + Len(1, "new") +
                    Len(2, "ns") + Len(3, Len(1, "d") + Len(2, device));
  auto pods = ReadListResponse(Len(1, pod), kGpus);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].name, "new");
  ASSERT_EQ((*pods)[0].containers.size(), 2u);
  EXPECT_EQ((*pods)[0].containers[1].name, "d");
  EXPECT_EQ((*pods)[0].containers[0].devices[0].device_ids,
            (std::vector<std::string>{"GPU-a", "GPU-b"}));
  ::v1::ListPodResourcesResponse reference;
  ASSERT_TRUE(reference.ParseFromString(Len(1, pod)));
  EXPECT_EQ(reference.pod_resources(0).name(), "new");
}

void ExpectRejected(const std::string& wire, const std::string& what) {
  auto pods = ReadListResponse(wire, nullptr);
  ASSERT_FALSE(pods.ok()) << what;
  EXPECT_NE(pods.error().message.find(what), std::string::npos) << pods.error().message;
  EXPECT_NE(pods.error().message.find("not a ListPodResourcesResponse"), std::string::npos);
}

TEST(WireTest, RefusesBrokenAnswersNamingTheByte) {
  std::string whole = TwoPods().SerializeAsString();
  ExpectRejected(whole.substr(0, whole.size() - 3), "past the end");
  ExpectRejected(Len(1, Len(1, "\xff\xfe")), "not UTF-8 at byte 4 of 6");
  ExpectRejected(Tag(1, 0) + "\x80", "a varint");
  ExpectRejected(std::string(1, '\0'), "field number 0 at byte 1 of 1");
  ExpectRejected(Tag(3, 4), "an end-group tag outside a group");
  ExpectRejected(Tag(3, 3) + Tag(4, 4), "an end-group tag of another group");
  ExpectRejected(Tag(3, 6), "an unknown wire type");
  ExpectRejected(Tag(3, 3), "a field tag");  // a group never closed
}

TEST(WireTest, RefusesNestingDeeperThanLibprotobufReads) {
  std::string wire;
  for (int i = 0; i < 200; ++i) wire += Tag(9, 3);
  for (int i = 0; i < 200; ++i) wire += Tag(9, 4);
  ExpectRejected(wire, "nested too deep");
  ::v1::ListPodResourcesResponse reference;
  EXPECT_FALSE(reference.ParseFromString(wire));
}

}  // namespace
}  // namespace gpulse::k8s
