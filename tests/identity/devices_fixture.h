// Device lists for the identity tests: what the NVML backend would report for a few host shapes.
#pragma once

#include <string>
#include <vector>

#include "core/device.h"
#include "identity/visible.h"

namespace gpulse::identity::testing {

inline DeviceInfo Gpu(unsigned index, std::string name, std::string uuid, std::string bus) {
  DeviceInfo d;
  d.index = index;
  d.name = std::move(name);
  d.uuid = std::move(uuid);
  d.pci_bus_id = std::move(bus);
  d.mig_enabled = false;
  return d;
}

// "GPU-<8 hex>-1111-2222-3333-444455556666": distinct, full-length (40 characters).
inline std::string Uuid(const std::string& head8, const std::string& prefix = "GPU-") {
  return prefix + head8 + "-1111-2222-3333-444455556666";
}

// Four identical A40s in bus order (the 4xA40-tp2 shape).
inline SystemInfo FourA40() {
  SystemInfo s;
  s.devices = {Gpu(0, "NVIDIA A40", Uuid("a0000000"), "00000000:17:00.0"),
               Gpu(1, "NVIDIA A40", Uuid("a1111111"), "00000000:65:00.0"),
               Gpu(2, "NVIDIA A40", Uuid("a2222222"), "00000000:CA:00.0"),
               Gpu(3, "NVIDIA A40", Uuid("a3333333"), "00000000:E3:00.0")};
  return s;
}

// The UUIDs of shared/research's lilbee mask tests, on four identical GPUs.
inline SystemInfo LilbeeHost() {
  SystemInfo s;
  s.devices = {Gpu(0, "NVIDIA L4", Uuid("0f0f0f0f"), "00000000:01:00.0"),
               Gpu(1, "NVIDIA L4", Uuid("aaa00000"), "00000000:02:00.0"),
               Gpu(2, "NVIDIA L4", Uuid("bbb00000"), "00000000:03:00.0"),
               Gpu(3, "NVIDIA L4", Uuid("abcdef12"), "00000000:04:00.0")};
  return s;
}

// Two models: an H100 and an A40 (speed order may differ from bus order).
inline SystemInfo Mixed() {
  SystemInfo s;
  s.devices = {Gpu(0, "NVIDIA A40", Uuid("c0000000"), "00000000:17:00.0"),
               Gpu(1, "NVIDIA H100 80GB HBM3", Uuid("c1111111"), "00000000:65:00.0")};
  return s;
}

// NVML's index order is not the bus order (NVML guarantees nothing; CUDA's PCI_BUS_ID sorts by
// bus).
inline SystemInfo BusOrderDiffers() {
  SystemInfo s;
  s.devices = {Gpu(0, "NVIDIA A40", Uuid("d0000000"), "00000000:65:00.0"),
               Gpu(1, "NVIDIA A40", Uuid("d1111111"), "00000000:17:00.0")};
  return s;
}

// GPU 0 in MIG mode with two instances, GPU 1 a whole A100.
inline SystemInfo MigHost() {
  SystemInfo s;
  DeviceInfo g0 = Gpu(0, "NVIDIA A100-SXM4-40GB", Uuid("e0000000"), "00000000:07:00.0");
  g0.mig_enabled = true;
  g0.mig_instances = {{2, 0, Uuid("m2000000", "MIG-"), "3g.20gb", {}},
                      {3, 0, Uuid("m3000000", "MIG-"), "2g.10gb", {}}};
  s.devices = {g0, Gpu(1, "NVIDIA A100-SXM4-40GB", Uuid("e1111111"), "00000000:0F:00.0")};
  return s;
}

// GPU 1 could not be read (NO_PERMISSION): three listed, one skipped.
inline SystemInfo WithSkipped() {
  SystemInfo s;
  s.devices = {Gpu(0, "NVIDIA A40", Uuid("f0000000"), "00000000:17:00.0"),
               Gpu(2, "NVIDIA A40", Uuid("f2222222"), "00000000:CA:00.0"),
               Gpu(3, "NVIDIA A40", Uuid("f3333333"), "00000000:E3:00.0")};
  s.skipped = {{1, "no permission (nvmlDeviceGetHandleByIndex: NVML_ERROR_NO_PERMISSION)"}};
  return s;
}

// "GPU 3" or "GPU 0 MIG 2/0": how the tables write an ordinal's device.
inline std::string Describe(const PhysicalDevice& p) {
  std::string s = "GPU " + std::to_string(p.index);
  if (p.mig) {
    s += " MIG " + std::to_string(p.mig->gpu_instance_id) + "/" +
         std::to_string(p.mig->compute_instance_id);
  }
  return s;
}

}  // namespace gpulse::identity::testing
