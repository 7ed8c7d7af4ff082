#include "faults/xid_line.h"

#include <gtest/gtest.h>

namespace gpulse::faults {
namespace {

TEST(XidLine, ParsesTheCurrentDriversLineWithProcess) {
  auto x = ParseXidLine(
      "NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, "
      "errorString CTX SWITCH TIMEOUT, Info 0x58005");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->pci, (PciAddress{0, 0xcb, 0, 0}));
  EXPECT_EQ(x->xid, 109u);
  EXPECT_EQ(x->pid, 1797828u);
  EXPECT_EQ(x->process, "pt_main_thread");
  EXPECT_EQ(x->text, "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005");
  EXPECT_FALSE(x->gpu_instance);
}

TEST(XidLine, ParsesLinesWithoutProcessAndTheOldUnknownProcess) {
  auto a = ParseXidLine("NVRM: Xid (PCI:0000:5a:00): 79, GPU has fallen off the bus.");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->xid, 79u);
  EXPECT_FALSE(a->pid);
  EXPECT_EQ(a->text, "GPU has fallen off the bus.");
  auto b = ParseXidLine(
      "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the "
      "bus");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->pid);
  EXPECT_EQ(b->process, "");
  EXPECT_EQ(b->text, "GPU has fallen off the bus");
  auto old = ParseXidLine("NVRM: Xid (0000:03:00): 14, Channel 00000001");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->pci, (PciAddress{0, 3, 0, 0}));
  EXPECT_EQ(old->xid, 14u);
}

TEST(XidLine, ParsesMigAttributionAndDomains) {
  auto x = ParseXidLine(
      "NVRM: Xid (PCI:0009:01:00 GPU-I:05 GPU-CI:01): 94, pid=7194, Contained: CE User Channel "
      "(0x9). RST: No, D-RST: No");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->pci, (PciAddress{9, 1, 0, 0}));
  EXPECT_EQ(x->gpu_instance, 5u);
  EXPECT_EQ(x->compute_instance, 1u);
  EXPECT_EQ(x->pid, 7194u);
  EXPECT_EQ(x->process, "");
  EXPECT_EQ(x->text, "Contained: CE User Channel (0x9). RST: No, D-RST: No");
}

TEST(XidLine, RefusesWhatIsNotAnXidLine) {
  EXPECT_FALSE(ParseXidLine("NVRM: GPU at PCI:0000:9b:00: GPU-509665ad"));
  EXPECT_FALSE(ParseXidLine("NVRM: Xid (PCI:zz:00): 79, x"));
  EXPECT_FALSE(ParseXidLine("NVRM: Xid (PCI:0000:3b:00): seventy, x"));
  EXPECT_FALSE(ParseXidLine("NVRM: Xid (PCI:0000:3b:00 GPU-X:1): 79, x"));
  EXPECT_FALSE(ParseXidLine("usb 1-1: new device"));
  EXPECT_FALSE(ParseXidLine("user said NVRM: Xid (PCI:0000:3b:00): 79, x")) << "not at the start";
  EXPECT_FALSE(ParseSxidLine("x nvidia-nvswitch1: SXid (PCI:0000:05:00.0): 1, y"));
}

TEST(XidLine, ParsesSxidLines) {
  auto s = ParseSxidLine(
      "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted "
      "PRIV error (First)");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->nvswitch, 3u);
  EXPECT_EQ(s->pci, (PciAddress{0, 5, 0, 0}));
  EXPECT_EQ(s->sxid, 12028u);
  EXPECT_EQ(s->text, "Non-fatal, Link 32 egress non-posted PRIV error (First)");
  EXPECT_FALSE(ParseSxidLine("NVRM: Xid (PCI:0000:05:00): 12, x"));
}

TEST(XidLine, ParsesNvmlBusIdsAndRefusesBadOnes) {
  EXPECT_EQ(ParsePciAddress("00000000:3B:00.0"), (PciAddress{0, 0x3b, 0, 0}));
  EXPECT_EQ(ParsePciAddress("0001:18:1f.7"), (PciAddress{1, 0x18, 0x1f, 7}));
  EXPECT_EQ(ParsePciAddress("3b:00.0"), (PciAddress{0, 0x3b, 0, 0}));
  EXPECT_FALSE(ParsePciAddress("0000:3b:20"));    // device > 31
  EXPECT_FALSE(ParsePciAddress("0000:3b:00.8"));  // function > 7
  EXPECT_FALSE(ParsePciAddress("a:b:c:d"));
  EXPECT_FALSE(ParsePciAddress(""));
}

TEST(XidLine, ReadsXid154sActionAndXid45sCause) {
  EXPECT_EQ(RecoveryActionOf154(
                "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"),
            1u);
  EXPECT_EQ(RecoveryActionOf154("GPU recovery action changed from 0x1 (GPU Reset Required) to "
                                "0x0 (None)"),
            0u);
  EXPECT_FALSE(RecoveryActionOf154("something else"));
  EXPECT_EQ(RootCauseXid("Ch 00000001 caused by previous Xid 149"), 149u);
  EXPECT_FALSE(RootCauseXid("Ch 00000001"));
}

}  // namespace
}  // namespace gpulse::faults
