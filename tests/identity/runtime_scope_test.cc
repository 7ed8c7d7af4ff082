// Which GPUs a process in another container can open: NVIDIA_VISIBLE_DEVICES as the NVIDIA
// container runtime reads it, and what its CUDA ordinals then are.
#include "identity/runtime_scope.h"

#include <gtest/gtest.h>

#include "identity/cuda_visible.h"
#include "identity/devices_fixture.h"

namespace gpulse::identity {
namespace {

std::variant<RuntimeScope, Refusal> Scope(const std::optional<std::string>& value,
                                          const SystemInfo& info) {
  Environment env;
  if (value) env.Set("NVIDIA_VISIBLE_DEVICES", *value);
  return ContainerScope(env, info, "process 7 (container abc)");
}

std::vector<std::size_t> Positions(const std::variant<RuntimeScope, Refusal>& s) {
  return std::get<RuntimeScope>(s).positions;
}

TEST(ContainerScope, AllIsEveryGpu) {
  SystemInfo info = testing::FourA40();
  EXPECT_EQ(Positions(Scope("all", info)), (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(ContainerScope, NoneVoidAndEmptyGiveNoGpu) {
  SystemInfo info = testing::FourA40();
  for (const char* v : {"none", "void", ""}) EXPECT_TRUE(Positions(Scope(v, info)).empty()) << v;
}

TEST(ContainerScope, IndicesAndUuidsNameHostGpus) {
  SystemInfo info = testing::FourA40();
  EXPECT_EQ(Positions(Scope("3," + testing::Uuid("a1111111"), info)),
            (std::vector<std::size_t>{1, 3}));
}

TEST(ContainerScope, AbsentVariableIsARefusal) {
  auto s = Scope(std::nullopt, testing::FourA40());
  ASSERT_TRUE(std::holds_alternative<Refusal>(s));
  EXPECT_NE(std::get<Refusal>(s).reason.find("process 7 (container abc)"), std::string::npos);
  EXPECT_NE(std::get<Refusal>(s).reason.find("NVIDIA_VISIBLE_DEVICES"), std::string::npos);
}

TEST(ContainerScope, UnresolvedFormsAreRefusals) {
  SystemInfo info = testing::FourA40();
  for (const char* v : {"/var/run/nvidia-container-devices", "0:1", "MIG-abc", "9", "GPU-ffff"}) {
    EXPECT_TRUE(std::holds_alternative<Refusal>(Scope(v, info))) << v;
  }
}

TEST(ContainerScope, CudaInsideTheContainerNumbersItsGpusInBusOrder) {
  SystemInfo info = testing::FourA40();
  auto scope = Scope(testing::Uuid("a3333333") + "," + testing::Uuid("a1111111"), info);
  Environment env;  // CUDA_VISIBLE_DEVICES unset inside the container
  Mapping m = ResolveCuda(env, info, std::get<RuntimeScope>(scope));
  ASSERT_EQ(m.ordinals.size(), 2u);
  EXPECT_EQ(m.ordinals[0].index, 1u);
  EXPECT_EQ(m.ordinals[1].index, 3u);
  env.Set("CUDA_VISIBLE_DEVICES", "1");
  m = ResolveCuda(env, info, std::get<RuntimeScope>(scope));
  ASSERT_EQ(m.ordinals.size(), 1u);
  EXPECT_EQ(m.ordinals[0].index, 3u) << "inside the container, index 1 is its second GPU";
  env.Set("CUDA_VISIBLE_DEVICES", testing::Uuid("a0000000"));
  m = ResolveCuda(env, info, std::get<RuntimeScope>(scope));
  EXPECT_TRUE(m.ordinals.empty()) << "a GPU the container was not given";
}

}  // namespace
}  // namespace gpulse::identity
