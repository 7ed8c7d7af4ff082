#include "faults/xid_line.h"

#include <charconv>

namespace gpulse::faults {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

template <typename T>
std::optional<T> Number(std::string_view s, int base = 10) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Splits off the leading run of characters that `keep` accepts.
std::string_view Take(std::string_view& s, bool (*keep)(char)) {
  std::size_t n = 0;
  while (n < s.size() && keep(s[n])) ++n;
  std::string_view out = s.substr(0, n);
  s.remove_prefix(n);
  return out;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// " GPU-I:05", " GPU-CI:01" after the address.
bool InstanceIds(std::string_view rest, XidLine& out) {
  while (!rest.empty()) {
    if (rest.front() != ' ') return false;
    rest.remove_prefix(1);
    std::optional<unsigned>* slot = nullptr;
    if (StartsWith(rest, "GPU-I:")) {
      slot = &out.gpu_instance;
      rest.remove_prefix(6);
    } else if (StartsWith(rest, "GPU-CI:")) {
      slot = &out.compute_instance;
      rest.remove_prefix(7);
    } else {
      return false;
    }
    auto id = Number<unsigned>(Take(rest, IsDigit));
    if (!id) return false;
    *slot = id;
  }
  return true;
}

// "pid=1234, " or "pid='<unknown>', ", then "name=python3, ": both optional.
void ProcessFields(std::string_view& rest, XidLine& out) {
  if (StartsWith(rest, "pid=")) {
    std::size_t comma = rest.find(", ");
    if (comma == std::string_view::npos) return;
    out.pid = Number<std::uint32_t>(rest.substr(4, comma - 4));
    rest.remove_prefix(comma + 2);
  }
  if (StartsWith(rest, "name=")) {
    std::size_t comma = rest.find(", ");
    std::string_view name = rest.substr(5, comma == std::string_view::npos ? rest.npos : comma - 5);
    if (name != "<unknown>") out.process = std::string(name);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
  }
}

}  // namespace

std::optional<PciAddress> ParsePciAddress(std::string_view s) {
  if (StartsWith(s, "PCI:")) s.remove_prefix(4);
  PciAddress a;
  std::size_t dot = s.find('.');
  if (dot != std::string_view::npos) {
    auto f = Number<std::uint32_t>(s.substr(dot + 1), 16);
    if (!f || *f > 7) return std::nullopt;
    a.function = *f;
    s = s.substr(0, dot);
  }
  std::string_view parts[3];
  int n = 0;
  while (n < 3) {
    std::size_t colon = s.find(':');
    parts[n++] = s.substr(0, colon);
    if (colon == std::string_view::npos) break;
    s.remove_prefix(colon + 1);
    if (n == 3) return std::nullopt;  // a fourth part
  }
  if (n < 2) return std::nullopt;
  std::string_view domain = n == 3 ? parts[0] : "0";
  auto d = Number<std::uint32_t>(domain, 16);
  auto b = Number<std::uint32_t>(parts[n - 2], 16);
  auto dev = Number<std::uint32_t>(parts[n - 1], 16);
  if (!d || !b || !dev || *b > 0xff || *dev > 0x1f) return std::nullopt;
  a.domain = *d;
  a.bus = *b;
  a.device = *dev;
  return a;
}

std::optional<XidLine> ParseXidLine(std::string_view m) {
  constexpr std::string_view kHead = "NVRM: Xid (";  // the driver's line starts with it
  if (!StartsWith(m, kHead)) return std::nullopt;
  m.remove_prefix(kHead.size());
  std::size_t close = m.find("): ");
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view attr = m.substr(0, close);
  m.remove_prefix(close + 3);
  XidLine out;
  std::size_t space = attr.find(' ');
  auto pci = ParsePciAddress(attr.substr(0, space));
  if (!pci) return std::nullopt;
  out.pci = *pci;
  if (space != std::string_view::npos && !InstanceIds(attr.substr(space), out)) {
    return std::nullopt;
  }
  auto code = Number<std::uint64_t>(Take(m, IsDigit));
  if (!code) return std::nullopt;
  out.xid = *code;
  if (StartsWith(m, ", ")) {
    m.remove_prefix(2);
  } else if (StartsWith(m, ",")) {
    m.remove_prefix(1);
  } else if (!m.empty() && m.front() != ' ') {
    return std::nullopt;  // "79x": not a code
  }
  ProcessFields(m, out);
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.remove_suffix(1);
  out.text = std::string(m);
  return out;
}

std::optional<SxidLine> ParseSxidLine(std::string_view m) {
  // "nvidia-nvswitchN: SXid (", at the start of the line.
  constexpr std::string_view kSwitch = "nvidia-nvswitch", kHead = ": SXid (";
  if (!StartsWith(m, kSwitch)) return std::nullopt;
  m.remove_prefix(kSwitch.size());
  SxidLine out;
  out.nvswitch = Number<unsigned>(Take(m, IsDigit));
  if (!StartsWith(m, kHead)) return std::nullopt;
  m.remove_prefix(kHead.size());
  std::size_t close = m.find("): ");
  if (close == std::string_view::npos) return std::nullopt;
  auto pci = ParsePciAddress(m.substr(0, close));
  if (!pci) return std::nullopt;
  out.pci = *pci;
  m.remove_prefix(close + 3);
  auto code = Number<std::uint64_t>(Take(m, IsDigit));
  if (!code) return std::nullopt;
  out.sxid = *code;
  if (StartsWith(m, ", ")) m.remove_prefix(2);
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.remove_suffix(1);
  out.text = std::string(m);
  return out;
}

std::optional<std::uint64_t> RecoveryActionOf154(std::string_view text) {
  constexpr std::string_view kTo = " to 0x";
  std::size_t to = text.rfind(kTo);
  if (text.find("recovery action changed") == std::string_view::npos ||
      to == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view hex = text.substr(to + kTo.size());
  auto is_hex = [](char c) {
    return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  };
  return Number<std::uint64_t>(Take(hex, is_hex), 16);
}

std::optional<std::uint64_t> RootCauseXid(std::string_view text) {
  constexpr std::string_view kCause = "caused by previous Xid ";
  std::size_t at = text.rfind(kCause);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view n = text.substr(at + kCause.size());
  return Number<std::uint64_t>(Take(n, IsDigit));
}

}  // namespace gpulse::faults
