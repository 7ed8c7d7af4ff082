// Small helpers for the text attributes amdgpu reads once at open (identity, labels, DPM tables).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpulse::gpu::amdgpu {

// The file's text without trailing whitespace (at most 64 KiB); nullopt when it cannot be read.
std::optional<std::string> ReadText(const std::string& path);
// The names in a directory, sorted; empty when it cannot be listed.
std::vector<std::string> ListDir(const std::string& path);
// The last path component of a symbolic link's target ("" when `path` is not a link).
std::string LinkBasename(const std::string& path);
// "0x1002\n" -> 0x1002; nullopt when not a hex number.
std::optional<unsigned> ParseHex(std::string_view text);
// The highest clock of a pp_dpm_* table ("0: 500Mhz\n1: 2100Mhz *\n"), in MHz.
std::optional<unsigned> TopDpmLevelMhz(std::string_view table);

}  // namespace gpulse::gpu::amdgpu
