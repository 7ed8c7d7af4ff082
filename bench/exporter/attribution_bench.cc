// Kubernetes mode's work on each once-a-second process list (issue 20), on the k8s-8xH100 node:
// 8 GPUs, 13 listed processes (12 with a procfs entry in tests/testdata/procfs/k8s-8xH100, one
// exited), 4 GPU pods at the kubelet, lists 1 s apart.
//
//   BM_NewList/kept_holders   AttributionCache::Update, as the exporter does now: the holders are
//                             kept while the same PIDs are listed (the exited PID is retried every
//                             5th list, everything every 30th), each list apportioned.
//   BM_NewList/every_list     anchor, side by side: what the exporter did before on every list,
//                             ListedProcessCache::Update (procfs for new and unreadable PIDs) then
//                             ComputePodUsage (pod naming and apportioning).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "core/fields.h"
#include "exporter/attribution_cache.h"
#include "exporter/pod_usage.h"
#include "identity/attribution.h"

namespace gpulse::exporter {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;
const std::string kTree = std::string(GPULSE_SOURCE_DIR) + "/tests/testdata/procfs/k8s-8xH100";

struct Node {
  SystemInfo info;
  std::vector<Entity> entities;
  Snapshot snap;
  std::shared_ptr<k8s::PodState> state = std::make_shared<k8s::PodState>();
};

GpuProcess Proc(unsigned pid, double sm) {
  GpuProcess p;
  p.pid = pid;
  p.compute = true;
  p.used_memory_bytes = 1ull << 30;
  p.sm_util = sm;
  return p;
}

// The scenario's devices, processes and the kubelet's four GPU pods (as bench/exporter/kubernetes.py).
Node K8sNode() {
  Node n;
  const std::vector<std::vector<unsigned>> pids = {{41001}, {41002}, {41003}, {41004},
                                                   {42001, 43001}, {42002, 46001},
                                                   {45001, 45002}, {46501, 47001, 47002}};
  const FieldIndex power = *FindField("DCGM_FI_DEV_POWER_USAGE");
  for (unsigned i = 0; i < pids.size(); ++i) {
    DeviceInfo d;
    d.index = i;
    d.name = "NVIDIA H100 80GB HBM3";
    d.uuid = "GPU-0000000" + std::to_string(i) + "-1111-2222-3333-444455556666";
    d.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    d.mig_enabled = false;
    n.info.devices.push_back(d);
    ProcessList l;
    l.processes.emplace();
    for (unsigned pid : pids[i]) l.processes->push_back(Proc(pid, 40));
    n.snap.processes.push_back(std::move(l));
  }
  n.entities = BuildEntities(n.info);
  n.snap.entities.resize(n.entities.size());
  for (DeviceReading& r : n.snap.entities) {
    r.sample.values.resize(power + 1);
    r.sample.values[power] = 500.0;
  }
  n.state->ok = true;
  auto& by = n.state->assignments.by_entity;
  by.resize(n.entities.size());
  for (int g = 0; g < 4; ++g) by[g] = {{"train-0", "ml", "trainer", ""}};
  by[4] = {{"vllm-0", "serving", "vllm", "1"}, {"embed-0", "serving", "embed", "2"}};
  by[5] = {{"vllm-0", "serving", "vllm", "0"}};
  by[6] = {{"batch-0", "batch", "worker-a", "0"}, {"batch-0", "batch", "worker-b", "1"}};
  return n;
}

// Each iteration: a new list of the same PIDs, 1 s after the last.
void Relist(Node& n, std::int64_t t) {
  for (ProcessList& l : n.snap.processes) l.t_mono_ns = t;
}

void BM_NewList_KeptHolders(benchmark::State& st) {
  Node n = K8sNode();
  AttributionCache cache(sys::RootedFs(kTree), false);
  std::int64_t t = 0;
  for (auto _ : st) {
    Relist(n, t += kSecond);
    benchmark::DoNotOptimize(cache.Update(n.info, n.entities, n.snap, n.state, t).pods.size());
  }
  st.counters["pod_rows"] = static_cast<double>(cache.Update(n.info, n.entities, n.snap, n.state, t).pods.size());
  st.counters["holder_passes_per_list"] =
      static_cast<double>(cache.holder_passes()) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_NewList_KeptHolders)->Name("BM_NewList/kept_holders");

void BM_NewList_EveryList(benchmark::State& st) {
  Node n = K8sNode();
  identity::ListedProcessCache procs(sys::RootedFs(kTree), identity::ProcFacts::kCgroupOnly,
                                     30 * kSecond);
  std::int64_t t = 0;
  for (auto _ : st) {
    Relist(n, t += kSecond);
    const auto& known = procs.Update(n.snap.processes, t);
    benchmark::DoNotOptimize(
        ComputePodUsage(n.info, n.entities, n.snap, n.state->assignments, known).size());
  }
}
BENCHMARK(BM_NewList_EveryList)->Name("BM_NewList/every_list");

}  // namespace
}  // namespace gpulse::exporter

BENCHMARK_MAIN();
