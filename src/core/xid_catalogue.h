// NVIDIA's Xid catalogue as data (docs/faults.md, docs/adr/0027-xid-catalogue-as-data-and-a-fault-layer.md): every
// code of "Analyzing Xid Errors with the Xid Catalog" (Ampere and later; the spreadsheet
// Xid-Catalog.xlsx) with NVIDIA's mnemonic, description, the four products it says the code
// applies to and its two resolution buckets, spelled exactly as NVIDIA spells them; and the codes
// the driver's nverror.h defines after that catalogue, with their mnemonic only.
//
// On top of the catalogue, gpulse's recommended actions: NVIDIA's immediate buckets, the driver's
// own recovery actions (Xid 154, NVML's recovery action field), and UNKNOWN for a code NVIDIA gives
// no bucket for; ranked least to most severe by gpulse (NVIDIA publishes no order), each with how
// gpulse sees it done.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gpulse {

enum class XidSource {
  kCatalogue,            // NVIDIA's Ampere+ catalogue only
  kCatalogueAndArchive,  // also in the older (Volta and earlier) table
  kDriverHeader,         // only in the driver's nverror.h: newer than the catalogue
};
std::string_view XidSourceKey(XidSource s);  // "catalog", "catalog+archive", "nverror.h"

struct XidEntry {
  std::uint64_t xid;
  std::string_view mnemonic;
  std::string_view description;  // "" where NVIDIA's catalogue does not list the code
  // NVIDIA's four product columns as given, "A100=YES;H100=YES;B100=YES;GB200=NO"; "" when none.
  std::string_view applies_to;
  std::string_view immediate_action;      // NVIDIA's bucket, verbatim; "" when NVIDIA gives none
  std::string_view investigatory_action;  // likewise
  XidSource source;
};

// Every entry, in code order.
std::span<const XidEntry> XidCatalogue();
// The entry of `xid`, or null: a code the catalogue does not list is unknown, never fine.
const XidEntry* FindXid(std::uint64_t xid);

// Where the catalogue came from: NVIDIA states no version or date, so the file's identity.
struct XidCatalogueProvenance {
  std::string_view title;
  std::string_view url;
  std::string_view file;
  std::string_view sha256;
  std::string_view modified;  // the spreadsheet's own "modified" property
  std::string_view driver_header;  // the nverror.h the later codes come from
};
const XidCatalogueProvenance& XidCatalogueSource();

// ---- Recommended actions ------------------------------------------------------------------------

// What an action asks for and how gpulse sees that it happened (docs/faults.md).
enum class ActionClears {
  kNever,    // IGNORE: nothing pending
  kProcess,  // the process the Xid names exits (else a GPU reset or a reboot)
  kReset,    // a GPU reset, the driver's recovery action going back to none, or a reboot
  kReboot,   // a reboot (a new boot of the kernel log, a new boot id)
};

struct ActionInfo {
  std::string_view name;     // NVIDIA's bucket or recovery-action name, or UNKNOWN
  int rank;                  // gpulse's severity order; 0 is IGNORE
  std::string_view summary;  // one line, gpulse's words
  ActionClears clears;
};

// Every action gpulse recommends, least severe first.
std::span<const ActionInfo> AllActions();
// The action named `name`, or null.
const ActionInfo* FindAction(std::string_view name);

inline constexpr std::string_view kActionIgnore = "IGNORE";
inline constexpr std::string_view kActionUnknown = "UNKNOWN";

// The action NVIDIA's immediate bucket for `xid` asks for, before the conditional buckets are
// resolved (XidActionResolver in faults/ does that with the message and the Xids around it):
// UNKNOWN for a code not in the catalogue or without a bucket.
const ActionInfo& CatalogueAction(std::uint64_t xid);

// NVML's recovery actions (nvmlDeviceGpuRecoveryAction_t, field 230, Xid 154) as gpulse actions:
// 0 none (null: nothing pending), 1 RESET_GPU, 2 RESTART_BM, 3 DRAIN_P2P, 4 DRAIN_AND_RESET,
// 5 RECOVER_IMEX_DOMAIN; any other value UNKNOWN.
const ActionInfo* DriverRecoveryAction(std::uint64_t value);

}  // namespace gpulse
