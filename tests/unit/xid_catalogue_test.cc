// NVIDIA's Xid catalogue as data (core/xid_catalogue.h): every code 1-172 of the spreadsheet and
// the four nverror.h codes after it, in code order, with NVIDIA's buckets verbatim; gpulse's
// recommended action for each, and its ranking of actions.
#include "core/xid_catalogue.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace gpulse {
namespace {

TEST(XidCatalogue, ListsCodes1To172FromTheCatalogueAnd173To176FromTheDriverHeader) {
  const auto entries = XidCatalogue();
  ASSERT_EQ(entries.size(), 176u);
  std::size_t from_catalogue = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const XidEntry& e = entries[i];
    EXPECT_EQ(e.xid, i + 1) << "codes 1-176, none missing";
    if (e.xid <= 172) {
      EXPECT_TRUE(e.source == XidSource::kCatalogue || e.source == XidSource::kCatalogueAndArchive)
          << "Xid " << e.xid;
      ++from_catalogue;
    } else {
      EXPECT_EQ(e.source, XidSource::kDriverHeader) << "Xid " << e.xid;
    }
  }
  EXPECT_EQ(from_catalogue, 172u);
}

TEST(XidCatalogue, IsInStrictlyIncreasingCodeOrderSoLookupsFindEveryEntry) {
  const auto entries = XidCatalogue();
  for (std::size_t i = 1; i < entries.size(); ++i) {
    EXPECT_LT(entries[i - 1].xid, entries[i].xid) << "at entry " << i;
  }
  for (const XidEntry& e : entries) {
    EXPECT_EQ(FindXid(e.xid), &e) << "Xid " << e.xid;
  }
}

TEST(XidCatalogue, EveryEntryHasAMnemonicAndTheCatalogueOnesADescriptionAndProducts) {
  const std::regex products("A100=(YES|NO);H100=(YES|NO);B100=(YES|NO);GB200=(YES|NO)");
  for (const XidEntry& e : XidCatalogue()) {
    EXPECT_FALSE(e.mnemonic.empty()) << "Xid " << e.xid;
    if (e.source == XidSource::kDriverHeader) {
      EXPECT_TRUE(e.description.empty() && e.applies_to.empty() && e.immediate_action.empty() &&
                  e.investigatory_action.empty())
          << "nverror.h gives a name only: Xid " << e.xid;
      continue;
    }
    EXPECT_FALSE(e.description.empty()) << "Xid " << e.xid;
    EXPECT_TRUE(std::regex_match(std::string(e.applies_to), products))
        << "Xid " << e.xid << ": " << e.applies_to;
  }
}

TEST(XidCatalogue, GivesNvidiasBucketsVerbatim) {
  const XidEntry* fell_off = FindXid(79);
  ASSERT_NE(fell_off, nullptr);
  EXPECT_EQ(fell_off->mnemonic, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
  EXPECT_EQ(fell_off->immediate_action, "RESTART_BM");
  EXPECT_EQ(fell_off->investigatory_action, "CONTACT_SUPPORT");

  const XidEntry* dbe = FindXid(48);
  ASSERT_NE(dbe, nullptr);
  EXPECT_EQ(dbe->mnemonic, "ROBUST_CHANNEL_GPU_ECC_DBE");
  EXPECT_EQ(dbe->immediate_action, "WORKFLOW_XID_48");
}

TEST(XidCatalogue, AnUnlistedCodeIsUnknownNeverFine) {
  EXPECT_EQ(FindXid(0), nullptr);
  EXPECT_EQ(FindXid(177), nullptr);
  EXPECT_EQ(FindXid(999), nullptr);
  EXPECT_EQ(CatalogueAction(999).name, kActionUnknown);
  EXPECT_EQ(CatalogueAction(0).name, kActionUnknown);
}

TEST(CatalogueAction, IsNvidiasImmediateBucketResolvedForXid48) {
  EXPECT_EQ(CatalogueAction(79).name, "RESTART_BM");
  EXPECT_EQ(CatalogueAction(94).name, "RESTART_APP");
  EXPECT_EQ(CatalogueAction(48).name, "RESET_GPU") << "WORKFLOW_XID_48 without Xid 63/64: a reset";
  EXPECT_EQ(CatalogueAction(162).name, kActionUnknown) << "NVIDIA gives no bucket";
  EXPECT_EQ(CatalogueAction(173).name, kActionUnknown) << "nverror.h only";
}

TEST(CatalogueAction, EveryBucketNvidiaGivesIsAnActionGpulseKnows) {
  for (const XidEntry& e : XidCatalogue()) {
    const ActionInfo& a = CatalogueAction(e.xid);
    if (e.immediate_action.empty()) {
      EXPECT_EQ(a.name, kActionUnknown) << "Xid " << e.xid;
      continue;
    }
    EXPECT_NE(a.name, kActionUnknown) << "Xid " << e.xid << ": " << e.immediate_action;
    if (e.immediate_action != "WORKFLOW_XID_48") {
      EXPECT_EQ(a.name, e.immediate_action) << "Xid " << e.xid;
    }
  }
}

TEST(AllActions, AreRankedStrictlyFromIgnoreAtZero) {
  const auto actions = AllActions();
  ASSERT_FALSE(actions.empty());
  EXPECT_EQ(actions[0].name, kActionIgnore);
  EXPECT_EQ(actions[0].rank, 0);
  for (std::size_t i = 1; i < actions.size(); ++i) {
    EXPECT_LT(actions[i - 1].rank, actions[i].rank) << actions[i].name;
  }
  for (const ActionInfo& a : actions) {
    EXPECT_EQ(FindAction(a.name), &a) << a.name;
  }
  EXPECT_NE(FindAction(kActionUnknown), nullptr);
}

TEST(XidSourceKey, NamesEachSource) {
  EXPECT_EQ(XidSourceKey(XidSource::kCatalogue), "catalog");
  EXPECT_EQ(XidSourceKey(XidSource::kCatalogueAndArchive), "catalog+archive");
  EXPECT_EQ(XidSourceKey(XidSource::kDriverHeader), "nverror.h");
}

}  // namespace
}  // namespace gpulse
