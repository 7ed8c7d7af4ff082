// /proc/PID/cgroup → container and pod, for cgroup v1 and v2, the systemd and cgroupfs drivers, and
// each runtime (docker, containerd, cri-o, podman). Paths are the shapes documented by the kubelet
// and the runtimes (docs/identity.md).
#include "identity/cgroup.h"

#include <gtest/gtest.h>

#include <string>

namespace gpulse::identity {
namespace {

const std::string kId = "4f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const std::string kPod = "3f1c9a52-8d4e-4b7a-9e21-6c0d5a7b8e14";
const std::string kPodUnderscores = "3f1c9a52_8d4e_4b7a_9e21_6c0d5a7b8e14";

struct Case {
  const char* name;
  std::string file;  // /proc/PID/cgroup
  int version;
  const char* runtime;  // nullptr: no container
  const char* qos;      // nullptr: no pod
};

const Case kCases[] = {
    // cgroup v2, systemd driver (kubelet's default with containerd and cri-o today).
    {"V2SystemdContainerdBurstable",
     "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kPodUnderscores +
         ".slice/cri-containerd-" + kId + ".scope\n",
     2, "containerd", "Burstable"},
    {"V2SystemdContainerdGuaranteed",
     "0::/kubepods.slice/kubepods-pod" + kPodUnderscores + ".slice/cri-containerd-" + kId +
         ".scope\n",
     2, "containerd", "Guaranteed"},
    {"V2SystemdCrioBestEffort",
     "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kPodUnderscores +
         ".slice/crio-" + kId + ".scope\n",
     2, "cri-o", "BestEffort"},
    {"V2SystemdDockerOutsideKubernetes", "0::/system.slice/docker-" + kId + ".scope\n", 2, "docker",
     nullptr},
    {"V2RootlessPodman",
     "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId +
         ".scope/container\n",
     2, "podman", nullptr},
    {"V2HostProcess", "0::/user.slice/user-1000.slice/session-4.scope\n", 2, nullptr, nullptr},
    {"V2ConmonIsNotAContainer", "0::/system.slice/crio-conmon-" + kId + ".scope\n", 2, nullptr,
     nullptr},
    {"V2PodmanConmonIsNotAContainer", "0::/machine.slice/libpod-conmon-" + kId + ".scope\n", 2,
     nullptr, nullptr},
    {"V2PodLevelCgroupHasPodButNoContainer",
     "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kPodUnderscores +
         ".slice\n",
     2, nullptr, "Burstable"},
    // cgroup v2, cgroupfs driver.
    {"V2CgroupfsBareIdUnderPod", "0::/kubepods/besteffort/pod" + kPod + "/" + kId + "\n", 2,
     "unknown", "BestEffort"},
    {"V2CgroupfsCrioUnderPod", "0::/kubepods/burstable/pod" + kPod + "/crio-" + kId + "\n", 2,
     "cri-o", "Burstable"},
    {"V2CgroupfsGuaranteedPod", "0::/kubepods/pod" + kPod + "/" + kId + "\n", 2, "unknown",
     "Guaranteed"},
    {"V2CgroupfsPodmanParent", "0::/libpod_parent/libpod-" + kId + "\n", 2, "podman", nullptr},
    // cgroup v1 (one line per hierarchy), cgroupfs driver: Docker and dockershim-era kubelet.
    {"V1CgroupfsDocker",
     "12:pids:/docker/" + kId + "\n11:memory:/docker/" + kId + "\n1:name=systemd:/docker/" + kId +
         "\n",
     1, "docker", nullptr},
    {"V1CgroupfsKubepods",
     "12:pids:/kubepods/burstable/pod" + kPod + "/" + kId +
         "\n6:cpu,cpuacct:/kubepods/burstable/pod" + kPod + "/" + kId + "\n0::/\n",
     1, "unknown", "Burstable"},
    // cgroup v1, systemd driver.
    {"V1SystemdContainerd",
     "11:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
         kPodUnderscores + ".slice/cri-containerd-" + kId +
         ".scope\n10:devices:/kubepods.slice/kubepods-besteffort.slice/"
         "kubepods-besteffort-pod" +
         kPodUnderscores + ".slice/cri-containerd-" + kId + ".scope\n",
     1, "containerd", "BestEffort"},
    // Hybrid: the v2 line is "/" (systemd only), the v1 controllers name the container.
    {"HybridPrefersTheLineThatNamesAContainer",
     "0::/\n4:pids:/system.slice/docker-" + kId + ".scope\n1:name=systemd:/system.slice/docker-" +
         kId + ".scope\n",
     1, "docker", nullptr},
    // A v1 controller at "/" is skipped for one that names the container.
    {"V1PrefersControllersThatNameAContainer", "3:cpuset:/\n2:memory:/docker/" + kId + "\n", 1,
     "docker", nullptr},
    // Short (12-digit) ids are not container ids.
    {"ShortIdIsNotAContainer", "0::/docker/4f1e2d3c4b5a\n", 2, nullptr, nullptr},
    // A pod uid outside kubepods is not a pod.
    {"PodOutsideKubepodsIsNotAPod", "0::/system.slice/pod" + kPod + "/x\n", 2, nullptr, nullptr},
};

// gtest prints a parameter by name instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Cgroup : public ::testing::TestWithParam<Case> {};

TEST_P(Cgroup, Places) {
  const Case& c = GetParam();
  auto lines = ParseProcCgroup(c.file);
  ASSERT_TRUE(lines.ok()) << lines.error().message;
  CgroupPlacement p = Place(*lines);
  EXPECT_EQ(p.version, c.version);
  if (c.runtime == nullptr) {
    EXPECT_FALSE(p.container.has_value()) << p.container->id;
  } else {
    ASSERT_TRUE(p.container.has_value()) << p.path;
    EXPECT_EQ(p.container->id, kId);
    EXPECT_EQ(RuntimeName(p.container->runtime), c.runtime);
  }
  if (c.qos == nullptr) {
    EXPECT_FALSE(p.pod.has_value());
  } else {
    ASSERT_TRUE(p.pod.has_value()) << p.path;
    EXPECT_EQ(p.pod->uid, kPod);
    EXPECT_EQ(QosName(p.pod->qos), c.qos);
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, Cgroup, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CgroupParse, MalformedLineIsAnErrorNamingIt) {
  auto lines = ParseProcCgroup("0::/ok\nnot a cgroup line\n");
  ASSERT_FALSE(lines.ok());
  EXPECT_EQ(lines.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(lines.error().message.find("line 2"), std::string::npos);
}

TEST(CgroupParse, PathMayContainColons) {
  auto lines = ParseProcCgroup("0::/a:b/c\n");
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].path, "/a:b/c");
}

TEST(CgroupParse, NoLinesGiveNoPlacement) {
  auto lines = ParseProcCgroup("");
  ASSERT_TRUE(lines.ok());
  CgroupPlacement p = Place(*lines);
  EXPECT_EQ(p.path, "");
  EXPECT_FALSE(p.container.has_value());
}

TEST(CgroupClassify, StaticPodUidWithoutDashes) {
  CgroupPlacement p = ClassifyPath("/kubepods/pod0123456789abcdef0123456789abcdef/" + kId);
  ASSERT_TRUE(p.pod.has_value());
  EXPECT_EQ(p.pod->uid, "0123456789abcdef0123456789abcdef");
}

TEST(CgroupClassify, InnermostContainerWins) {
  const std::string inner(64, 'b');
  CgroupPlacement p = ClassifyPath("/system.slice/docker-" + kId + ".scope/docker/" + inner);
  ASSERT_TRUE(p.container.has_value());
  EXPECT_EQ(p.container->id, inner);
  EXPECT_EQ(RuntimeName(p.container->runtime), "docker");
}

}  // namespace
}  // namespace gpulse::identity

namespace gpulse::identity {
namespace {

// Slurm's job cgroups (issue 20 item 3): cgroup/v2's slurmstepd.scope and cgroup/v1's
// /slurm/uid_U/job_N/step_M, on their own and inside a node's other hierarchies.
struct SlurmCase {
  const char* name;
  std::string file;
  int version;
  const char* job;   // nullptr: no job
  const char* step;  // nullptr: no step
};

const SlurmCase kSlurm[] = {
    {"V2Step", "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", 2, "4242", "0"},
    {"V2Batch", "0::/system.slice/slurmstepd.scope/job_17/step_batch/user/task_0\n", 2, "17",
     "batch"},
    {"V2JobLevel", "0::/system.slice/slurmstepd.scope/job_17\n", 2, "17", nullptr},
    {"V2Slurmstepd", "0::/system.slice/slurmstepd.scope/system\n", 2, nullptr, nullptr},
    {"V1Step",
     "12:pids:/slurm/uid_1000/job_99/step_3/task_1\n11:memory:/slurm/uid_1000/job_99/step_3/"
     "task_1\n1:name=systemd:/system.slice/slurmd.service\n",
     1, "99", "3"},
    {"V1MultipleSlurmd", "4:devices:/slurm_node7/uid_0/job_5/step_extern\n", 1, "5", "extern"},
    {"NotSlurm", "0::/user.slice/user-1000.slice/job_12/step_0\n", 2, nullptr, nullptr},
    {"JobIdNotANumber", "0::/system.slice/slurmstepd.scope/job_x/step_0\n", 2, nullptr, nullptr},
};

class Slurm : public ::testing::TestWithParam<SlurmCase> {};

TEST_P(Slurm, Places) {
  const SlurmCase& c = GetParam();
  auto lines = ParseProcCgroup(c.file);
  ASSERT_TRUE(lines.ok());
  CgroupPlacement p = Place(*lines);
  EXPECT_EQ(p.version, c.version);
  EXPECT_FALSE(p.pod.has_value());
  if (c.job == nullptr) {
    EXPECT_FALSE(p.slurm.has_value()) << p.slurm->job_id;
    return;
  }
  ASSERT_TRUE(p.slurm.has_value());
  EXPECT_EQ(p.slurm->job_id, c.job);
  if (c.step == nullptr) {
    EXPECT_FALSE(p.slurm->step.has_value());
  } else {
    EXPECT_EQ(p.slurm->step.value_or("?"), c.step);
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, Slurm, ::testing::ValuesIn(kSlurm),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SlurmV1, NamesTheUser) {
  CgroupPlacement p = ClassifyPath("/slurm/uid_1000/job_99/step_3");
  ASSERT_TRUE(p.slurm.has_value());
  EXPECT_EQ(p.slurm->uid, 1000u);
}

}  // namespace
}  // namespace gpulse::identity

namespace gpulse::identity {
namespace {

// The DaemonSet reads the host's /proc from inside its own cgroup namespace (deploy/kubernetes):
// the kernel then writes other cgroups relative to the reader's root, with ".." components, and
// the common ancestor (kubepods.slice, or the QoS slice) may be above the part it writes.
TEST(CgroupClassify, PathsRelativeToAnotherCgroupNamespaceStillName) {
  CgroupPlacement p = ClassifyPath("/../../../kubepods-burstable.slice/kubepods-burstable-pod" +
                                   kPodUnderscores + ".slice/cri-containerd-" + kId + ".scope");
  ASSERT_TRUE(p.pod.has_value());
  EXPECT_EQ(p.pod->uid, kPod);
  EXPECT_EQ(p.pod->qos, QosClass::kBurstable);
  ASSERT_TRUE(p.container.has_value());
  CgroupPlacement g = ClassifyPath("/../../kubepods-pod" + kPodUnderscores +
                                   ".slice/cri-containerd-" + kId + ".scope");
  ASSERT_TRUE(g.pod.has_value());
  EXPECT_EQ(g.pod->qos, QosClass::kGuaranteed);
  CgroupPlacement b = ClassifyPath("/../kubepods-besteffort-pod" + kPodUnderscores + ".slice/x");
  ASSERT_TRUE(b.pod.has_value());
  EXPECT_EQ(b.pod->qos, QosClass::kBestEffort);
  CgroupPlacement q =
      ClassifyPath("/../../../kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                   kPodUnderscores + ".slice/cri-containerd-" + kId + ".scope");
  ASSERT_TRUE(q.pod.has_value());
  EXPECT_EQ(q.pod->qos, QosClass::kBurstable);
  // Only relative paths, and only the self-naming systemd form: an absolute path still needs
  // kubepods, and cgroupfs's bare "pod<uid>" always does.
  EXPECT_FALSE(ClassifyPath("/system.slice/kubepods-pod" + kPodUnderscores + ".slice/x").pod);
  EXPECT_FALSE(ClassifyPath("/../../pod" + kPod + "/x").pod);
  CgroupPlacement s = ClassifyPath("/../../system.slice/slurmstepd.scope/job_7/step_0/user/task_0");
  ASSERT_TRUE(s.slurm.has_value());
  EXPECT_EQ(s.slurm->job_id, "7");
}

}  // namespace
}  // namespace gpulse::identity
