#include "cli/procfs_options.h"

#include <CLI/CLI.hpp>

#include "sys/procfs.h"

namespace gpulse::cli {

void AddProcfsOption(CLI::App& app, std::string& root) {
  app.add_option("--procfs-root", root,
                 "procfs tree to read processes from (default: $GPULSE_PROCFS_ROOT, else /proc; "
                 "with --simulate, none unless given)");
}

Status CheckProcfsOption(const std::string& option) {
  if (option.empty()) return Status::Ok();
  auto chosen = ChooseProcfs(option, false);
  if (!chosen) return chosen.error();
  return Status::Ok();
}

Result<std::optional<sys::RootedFs>> ChooseProcfs(const std::string& option, bool simulated) {
  std::string root = sys::ChooseProcfsRoot(option);
  if (root.empty() && simulated) return std::optional<sys::RootedFs>();
  const bool chosen = !root.empty();
  sys::RootedFs fs(chosen ? root : sys::kDefaultProcfsRoot);
  if (auto listing = fs.ListDir(""); !listing && chosen) {
    const char* from = option.empty() ? "GPULSE_PROCFS_ROOT" : "--procfs-root";
    return InvalidArgument(std::string(from) + ": " + listing.error().message);
  }
  return std::optional<sys::RootedFs>(std::move(fs));
}

}  // namespace gpulse::cli
