// Differential: the kubelet's List answer read by gpulse's wire reader
// (src/k8s/pod_resources_wire.h) against libprotobuf's parser of the generated
// ListPodResourcesResponse followed by the conversion the client did before the reader existed.
// Where libprotobuf accepts the bytes, the reader must accept them and give the same pods,
// containers, resources and device ids, in the same order; where the reader accepts them keeping
// every resource, it must also accept them keeping only the GPU resources, with the same pods. A
// rejection names a byte offset inside the answer.
#include "identity/pod_resources.h"

#include <google/protobuf/stubs/logging.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "k8s/pod_resources_wire.h"
#include "podresources_v1.pb.h"

using namespace gpulse;

namespace {

// The old client's conversion: every pod, its containers with a kept device, those devices.
std::vector<identity::PodResources> Convert(const ::v1::ListPodResourcesResponse& r,
                                            const k8s::KeepResource& keep) {
  std::vector<identity::PodResources> pods;
  for (const ::v1::PodResources& p : r.pod_resources()) {
    identity::PodResources pod{p.name(), p.namespace_(), {}};
    for (const ::v1::ContainerResources& c : p.containers()) {
      identity::ContainerResources container{c.name(), {}};
      for (const ::v1::ContainerDevices& d : c.devices()) {
        if (keep && !keep(d.resource_name())) continue;
        container.devices.push_back(
            {d.resource_name(),
             std::vector<std::string>(d.device_ids().begin(), d.device_ids().end())});
      }
      if (!container.devices.empty()) pod.containers.push_back(std::move(container));
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

// One string per pod, every byte of what was read.
std::vector<std::string> Flatten(const std::vector<identity::PodResources>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) {
    std::string s = p.name + '\0' + p.ns;
    for (const auto& c : p.containers) {
      s += "\1" + c.name;
      for (const auto& d : c.devices) {
        s += "\2" + d.resource_name;
        for (const auto& id : d.device_ids) s += "\3" + id;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool OffsetInside(const std::string& message, std::size_t size) {
  std::size_t at = message.find(" at byte ");
  if (at == std::string::npos) return false;
  return std::strtoull(message.c_str() + at + 9, nullptr, 10) <= size;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // its UTF-8 complaints would flood the log
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view wire = fuzz::Text(data, size);
  const k8s::KeepResource all;
  const k8s::KeepResource gpus = [](std::string_view r) { return identity::CountedResource(r); };

  auto read_all = k8s::ReadListResponse(wire, all);
  auto read_gpus = k8s::ReadListResponse(wire, gpus);
  if (!read_all.ok()) FUZZ_CHECK(OffsetInside(read_all.error().message, size));
  if (!read_gpus.ok()) FUZZ_CHECK(OffsetInside(read_gpus.error().message, size));
  if (read_all.ok()) {
    FUZZ_CHECK(read_gpus.ok());
    FUZZ_CHECK(read_gpus->size() == read_all->size());
  }

  ::v1::ListPodResourcesResponse message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) return 0;
  FUZZ_CHECK(read_all.ok());
  FUZZ_CHECK(read_gpus.ok());
  FUZZ_CHECK(Flatten(*read_all) == Flatten(Convert(message, all)));
  FUZZ_CHECK(Flatten(*read_gpus) == Flatten(Convert(message, gpus)));
  return 0;
}
