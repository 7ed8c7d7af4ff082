// Discovery of amdgpu cards and the Backend over them (amdgpu_backend.h).
#include "gpu/amdgpu/amdgpu_backend.h"

#include <algorithm>
#include <filesystem>

#include "core/clock.h"
#include "gpu/amdgpu/sysfs_text.h"
#include "gpu/drm/device_names.h"

namespace gpulse::gpu::amdgpu {
namespace {

constexpr unsigned kAmdVendorId = 0x1002;

// The device's PCI name: the last component of the device link's target ("0000:c1:00.0"),
// else PCI_SLOT_NAME from its uevent.
std::string PciAddress(const std::string& device_dir) {
  std::string name = LinkBasename(device_dir);
  if (name.size() == 12 && name[4] == ':') return name;
  const std::string uevent = ReadText(device_dir + "/uevent").value_or("");
  const std::size_t at = uevent.find("PCI_SLOT_NAME=");
  if (at == std::string::npos) return "";
  return drm::LowerPciAddress(uevent.substr(at + 14, 12));
}

}  // namespace

Result<std::unique_ptr<AmdgpuBackend>> AmdgpuBackend::Open(const std::string& sysfs_root,
                                                           const std::string& procfs_root) {
  const std::string drm = sysfs_root + "/class/drm";
  std::vector<unsigned> cards;
  for (const std::string& name : ListDir(drm)) {
    if (auto n = drm::CardNumber(name)) cards.push_back(*n);
  }
  std::sort(cards.begin(), cards.end());
  std::unique_ptr<AmdgpuBackend> backend(new AmdgpuBackend(procfs_root));
  for (unsigned card : cards) {
    const std::string device_dir = drm + "/card" + std::to_string(card) + "/device";
    if (ParseHex(ReadText(device_dir + "/vendor").value_or("")) != kAmdVendorId) continue;
    if (LinkBasename(device_dir + "/driver") != "amdgpu") continue;
    backend->devices_.push_back(
        std::make_unique<AmdgpuDevice>(card, device_dir, PciAddress(device_dir)));
    backend->info_.devices.push_back(backend->devices_.back()->info());
    // GPUs are numbered from 0 in card order, as rocm-smi numbers them: a BMC's display on card0
    // must not make the only GPU "GPU 1" (issue 40). The card stays in the name and backend_index.
    DeviceInfo& d = backend->info_.devices.back();
    d.backend_index = d.index;
    d.index = static_cast<unsigned>(backend->info_.devices.size() - 1);
  }
  if (backend->devices_.empty()) return Unavailable("no amdgpu GPU under " + drm);
  backend->info_.backend = "amdgpu";
  backend->info_.library = sysfs_root;
  if (auto version = ReadText(sysfs_root + "/module/amdgpu/version");
      version && !version->empty()) {
    backend->info_.driver_version = *version;
  }
  return backend;
}

void AmdgpuBackend::Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) {
  out.t_mono_ns = MonotonicNowNs();
  out.t_unix_ns = UnixNowNs();
  devices_.at(pos)->Read(fields, out, stats_);
}

void AmdgpuBackend::PrimeProcesses() {
  const std::int64_t now = MonotonicNowNs();
  processes_.Prime(now);
  SleepUntilMonotonicNs(now + kProcessPrimeNs);
}

ProcessList AmdgpuBackend::Processes(std::size_t pos) {
  return processes_.Read(devices_.at(pos)->pci_address(), MonotonicNowNs());
}

Result<std::unique_ptr<Backend>> OpenAmdgpuBackend(const BackendOptions& options) {
  const bool simulated = !options.simulate.empty();
  if (simulated && options.sysfs_root.empty()) {
    return Unavailable("no amdgpu GPU: simulated devices read only an explicit --sysfs-root");
  }
  const std::string sysfs = options.sysfs_root.empty() ? "/sys" : options.sysfs_root;
  std::string procfs = options.procfs_root;
  if (procfs.empty() && !simulated) procfs = "/proc";
  auto backend = AmdgpuBackend::Open(sysfs, procfs);
  if (!backend.ok()) return backend.error();
  return std::unique_ptr<Backend>(std::move(backend).value());
}

}  // namespace gpulse::gpu::amdgpu
