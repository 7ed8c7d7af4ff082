// The driver's Xid and SXid lines in the kernel log (docs/faults.md, "The kernel log"):
//
//   NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
//   NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:01): 94, pid=7194, Contained: CE User Channel (0x9).
//   NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus
//   NVRM: Xid (0000:03:00): 14, Channel 00000001                      (drivers before "PCI:")
//   nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV ...
//
// The device attribute is the GPU's PCI domain, bus and device (the driver prints no function);
// pid and name are absent when the driver could attribute no process (570 and later) or
// '<unknown>' (before). Pure parsing: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpulse::faults {

// A PCI address as the kernel log prints it; the function is 0 where the line has none.
struct PciAddress {
  std::uint32_t domain = 0;
  std::uint32_t bus = 0;
  std::uint32_t device = 0;
  std::uint32_t function = 0;
  bool operator==(const PciAddress&) const = default;
};

// "0000:3b:00", "PCI:0000:3b:00", "00000000:3B:00.0" (NVML's bus id), "3b:00.0" (domain 0).
std::optional<PciAddress> ParsePciAddress(std::string_view text);

struct XidLine {
  PciAddress pci;
  std::optional<unsigned> gpu_instance;      // GPU-I:nn (MIG)
  std::optional<unsigned> compute_instance;  // GPU-CI:nn
  std::uint64_t xid = 0;
  std::optional<std::uint32_t> pid;  // absent: none printed, or '<unknown>'
  std::string process;               // name=; "" when none or <unknown>
  std::string text;                  // the rest: the Xid's own message
};

struct SxidLine {
  std::optional<unsigned> nvswitch;  // N of "nvidia-nvswitchN:"
  PciAddress pci;
  std::uint64_t sxid = 0;
  std::string text;
};

// The Xid of a kernel log message (the text after the record's ';'), or nullopt when the message
// is not an NVRM Xid line.
std::optional<XidLine> ParseXidLine(std::string_view message);
std::optional<SxidLine> ParseSxidLine(std::string_view message);

// The recovery action an Xid 154 message reports: "GPU recovery action changed from 0x0 (None)
// to 0x1 (GPU Reset Required)" gives 1.
std::optional<std::uint64_t> RecoveryActionOf154(std::string_view text);
// Xid 45's "... caused by previous Xid 149" suffix (driver 570.124 and later): 149.
std::optional<std::uint64_t> RootCauseXid(std::string_view text);

}  // namespace gpulse::faults
