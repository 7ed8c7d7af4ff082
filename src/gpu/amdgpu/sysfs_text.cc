// Text helpers for amdgpu's open-time reads (sysfs_text.h).
#include "gpu/amdgpu/sysfs_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

namespace gpulse::gpu::amdgpu {

std::optional<std::string> ReadText(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  bool ok = true;
  while (text.size() < 65536) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string LinkBasename(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
  if (ec) return "";
  return target.filename().string();
}

std::optional<unsigned> ParseHex(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  unsigned v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::optional<unsigned> TopDpmLevelMhz(std::string_view table) {
  std::optional<unsigned> top;
  while (!table.empty()) {
    const std::size_t eol = table.find('\n');
    std::string_view line = table.substr(0, eol);
    table = eol == std::string_view::npos ? std::string_view() : table.substr(eol + 1);
    // "N: 2100Mhz *" (also "S: 100Mhz", the deep-sleep level)
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view rest = line.substr(colon + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    unsigned mhz = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), mhz);
    if (ec != std::errc()) continue;
    std::string_view unit = rest.substr(static_cast<std::size_t>(p - rest.data()));
    if (!(unit.starts_with("Mhz") || unit.starts_with("MHz"))) continue;
    top = std::max(top.value_or(0), mhz);
  }
  return top;
}

}  // namespace gpulse::gpu::amdgpu
