#include "prom/writer.h"

#include <charconv>
#include <cmath>
#include <string>

#include "core/utf8.h"

namespace gpulse::prom {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty() || !(IsNameStart(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!IsNameStart(c) && !IsDigit(c) && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || !IsNameStart(name[0]) || name.starts_with("__")) return false;
  for (char c : name) {
    if (!IsNameStart(c) && !IsDigit(c)) return false;
  }
  return true;
}

void AppendEscapedLabelValue(std::string& out, std::string_view value) {
  if (!IsValidUtf8(value)) {
    std::string valid = ReplaceInvalidUtf8(value);
    return AppendEscapedLabelValue(out, valid);
  }
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

void AppendEscapedHelp(std::string& out, std::string_view help) {
  for (char c : help) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

std::string RenderLabels(std::span<const Label> labels) {
  std::string out;
  for (const Label& l : labels) {
    if (!out.empty()) out += ',';
    out += l.name;
    out += "=\"";
    AppendEscapedLabelValue(out, l.value);
    out += '"';
  }
  return out;
}

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        PromType type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  AppendEscapedHelp(out, help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += PromTypeName(type);
  out += '\n';
}

void AppendValue(std::string& out, double value, ValueFormat format) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[64];
  std::to_chars_result r{};
  switch (format) {
    case ValueFormat::kInteger:
      r = std::to_chars(buf, buf + sizeof buf, std::llround(value));
      break;
    case ValueFormat::kFixed:
      r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 6);
      break;
    case ValueFormat::kShortest:
      r = std::to_chars(buf, buf + sizeof buf, value);
      break;
  }
  if (r.ec != std::errc()) {  // cannot happen for finite doubles in 64 bytes except huge %f values
    r = std::to_chars(buf, buf + sizeof buf, value);
  }
  out.append(buf, r.ptr);
}

void AppendSample(std::string& out, std::string_view name, std::string_view rendered_labels,
                  std::string_view extra, double value, ValueFormat format) {
  out += name;
  if (!rendered_labels.empty() || !extra.empty()) {
    out += '{';
    out += rendered_labels;
    if (!rendered_labels.empty() && !extra.empty()) out += ',';
    out += extra;
    out += '}';
  }
  out += ' ';
  AppendValue(out, value, format);
  out += '\n';
}

}  // namespace gpulse::prom
