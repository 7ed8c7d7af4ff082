#include "power/readers/json_io.h"

#include <algorithm>
#include <cmath>
#include <system_error>

#include "sys/regular_file.h"

namespace gpulse::power {
namespace {

// Rewrites bare NaN / Infinity / -Infinity tokens (outside strings) to JSON strings and checks the
// nesting depth. Returns an error message or nothing.
std::optional<std::string> Prepare(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size() + 16);
  bool in_string = false;
  int depth = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < in.size())
        out.push_back(in[++i]);
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return "nesting deeper than " + std::to_string(kMaxJsonDepth);
    }
    if (c == ']' || c == '}') --depth;
    for (std::string_view tok : {"-Infinity", "Infinity", "NaN"}) {
      if (in.substr(i, tok.size()) == tok) {
        out.push_back('"');
        out.append(tok);
        out.push_back('"');
        i += tok.size() - 1;
        c = 0;
        break;
      }
    }
    if (c) out.push_back(c);
  }
  return std::nullopt;
}

}  // namespace

Result<Json> ParseJsonText(std::string_view text) {
  // JSON text is not preceded by a byte-order mark (RFC 8259 §8.1); Python's json, which the
  // upstream validator uses, refuses one, so gpulse does too instead of skipping it silently.
  if (text.starts_with("\xEF\xBB\xBF"))
    return InvalidArgument("starts with a UTF-8 byte-order mark");
  if (auto why = CheckJsonShape(text, kPowerJsonLimits)) return InvalidArgument(*why);
  std::string prepared;
  if (auto why = Prepare(text, prepared)) return InvalidArgument(*why);
  try {
    return Json::parse(prepared);
  } catch (const std::exception& e) {
    return InvalidArgument(e.what());
  }
}

Result<Json> ReadJsonFile(const std::filesystem::path& path) {
  // A regular file only, opened without blocking (a FIFO swapped in after a type check would hang
  // validate-power and energy), at most 64 MiB.
  auto text = sys::ReadRegularFile(path.string(), kMaxJsonFileBytes);
  if (!text) return text.error();
  return ParseJsonText(*text);
}

bool IsStrictInt(const Json& j) { return j.is_number_integer(); }  // excludes bool in nlohmann

std::optional<int64_t> AsStrictInt(const Json& j) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return std::nullopt;
}

bool IsFiniteNumber(const Json& j) {
  if (j.is_number_integer()) return true;
  return j.is_number_float() && std::isfinite(j.get<double>());
}

std::optional<double> AsFiniteNumber(const Json& j) {
  if (!IsFiniteNumber(j)) return std::nullopt;
  return j.get<double>();
}

bool IsNonEmptyString(const Json& j) {
  return j.is_string() && !j.get_ref<const std::string&>().empty();
}

bool IsLowerHex(std::string_view s, size_t length) {
  return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string Describe(const Json& j, size_t max_chars) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

std::string_view PyTypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "NoneType";
    case Json::value_t::object:
      return "dict";
    case Json::value_t::array:
      return "list";
    case Json::value_t::string:
      return "str";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::number_float:
      return "float";
    default:
      return "int";
  }
}

namespace {

bool Same(const Json& a, const Json& b, bool as_set);

bool SameSet(const Json& a, const Json& b) {
  std::vector<std::string> x, y;
  for (const auto& e : a) x.push_back(e.dump());
  for (const auto& e : b) y.push_back(e.dump());
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

bool Same(const Json& a, const Json& b, bool as_set) {
  if (a.is_boolean() || b.is_boolean()) return a.is_boolean() && b.is_boolean() && a == b;
  if (a.is_number() && b.is_number()) {
    if (a.is_number_integer() && b.is_number_integer()) return a == b;
    return a.get<double>() == b.get<double>();
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    if (as_set) return SameSet(a, b);
    for (size_t i = 0; i < a.size(); ++i)
      if (!Same(a[i], b[i], false)) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !Same(it.value(), *other, it.key() == "reason_codes")) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace

bool SameEvidence(const Json& a, const Json& b) { return Same(a, b, false); }

}  // namespace gpulse::power
