#include "prom/parser.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "prom/writer.h"

namespace gpulse::prom {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view SkipBlanks(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view TakeToken(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && !IsBlank(s[n])) ++n;
  std::string_view tok = s.substr(0, n);
  s.remove_prefix(n);
  return tok;
}

bool IsMetricChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':';
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (x != b[i]) return false;
  }
  return true;
}

// Unescapes a HELP text: \\ and \n; any other backslash sequence is kept as written.
void UnescapeHelp(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\\' && i + 1 < in.size() && (in[i + 1] == '\\' || in[i + 1] == 'n')) {
      out += in[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += in[i];
    }
  }
}

}  // namespace

const std::string* ParsedSample::Label(std::string_view label_name) const {
  for (const ParsedLabel& l : labels) {
    if (l.name == label_name) return &l.value;
  }
  return nullptr;
}

std::optional<double> ParseValue(std::string_view t) {
  if (t.empty()) return std::nullopt;
  bool negative = false;
  std::string_view body = t;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (EqualsNoCase(body, "inf") || EqualsNoCase(body, "infinity")) {
    double inf = std::numeric_limits<double>::infinity();
    return negative ? -inf : inf;
  }
  if (EqualsNoCase(body, "nan")) {
    if (body.size() != t.size()) return std::nullopt;  // no signed NaN
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (body.empty() || body.front() == '+' || body.front() == '-') return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec != std::errc() || end != body.data() + body.size()) return std::nullopt;
  return negative ? -v : v;
}

Status Parser::Fail(std::string what) {
  error_ = InvalidArgument("line " + std::to_string(line_no_) + ": " + what);
  return *error_;
}

Status Parser::Feed(std::string_view chunk) {
  if (error_) return *error_;
  std::size_t start = 0;
  if (!pending_.empty()) {
    std::size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(chunk);
      return Status::Ok();
    }
    pending_.append(chunk.substr(0, nl));
    std::string line = std::move(pending_);
    pending_.clear();
    if (Status s = ParseLine(line); !s) return s;
    start = nl + 1;
  }
  while (start < chunk.size()) {
    std::size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) {
      pending_.assign(chunk.substr(start));
      break;
    }
    if (Status s = ParseLine(chunk.substr(start, nl - start)); !s) return s;
    start = nl + 1;
  }
  return Status::Ok();
}

Status Parser::Finish() {
  if (error_) return *error_;
  if (pending_.empty()) return Status::Ok();
  std::string line = std::move(pending_);
  pending_.clear();
  return ParseLine(line);
}

Status Parser::ParseLine(std::string_view line) {
  ++line_no_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string_view rest = SkipBlanks(line);
  if (rest.empty()) return Status::Ok();
  if (rest.front() == '#') return ParseComment(rest);
  return ParseSampleLine(rest);
}

Status Parser::ParseComment(std::string_view line) {
  line.remove_prefix(1);
  line = SkipBlanks(line);
  std::string_view keyword = TakeToken(line);
  if (keyword != "HELP" && keyword != "TYPE") return Status::Ok();  // a plain comment
  line = SkipBlanks(line);
  std::string_view name = TakeToken(line);
  if (!IsValidMetricName(name))
    return Fail("bad metric name \"" + std::string(name) + "\" in " + std::string(keyword));
  if (!line.empty()) line.remove_prefix(1);  // the one separating blank
  if (keyword == "HELP") {
    UnescapeHelp(line, help_);
    if (cb_.on_help) cb_.on_help(name, help_);
    return Status::Ok();
  }
  std::string_view type = SkipBlanks(line);
  while (!type.empty() && IsBlank(type.back())) type.remove_suffix(1);
  if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
      type != "untyped") {
    return Fail("unknown metric type \"" + std::string(type) + "\"");
  }
  if (cb_.on_type) cb_.on_type(name, type);
  return Status::Ok();
}

Status Parser::ParseSampleLine(std::string_view line) {
  std::size_t n = 0;
  while (n < line.size() && IsMetricChar(line[n])) ++n;
  sample_.name = line.substr(0, n);
  if (!IsValidMetricName(sample_.name))
    return Fail("bad metric name at \"" + std::string(line.substr(0, 40)) + "\"");
  line.remove_prefix(n);
  // The name ends at '{' or a blank: "NAME.5" is not NAME with the value .5 (found by fuzzing the
  // collector's scrape parser against this one, issue 13).
  if (!line.empty() && line.front() != '{' && !IsBlank(line.front()))
    return Fail("expected '{' or a blank after the metric name " + std::string(sample_.name));
  line = SkipBlanks(line);
  std::size_t used = 0;
  if (!line.empty() && line.front() == '{') {
    line.remove_prefix(1);
    for (;;) {
      line = SkipBlanks(line);
      if (line.empty()) return Fail("unterminated label set");
      if (line.front() == '}') {
        line.remove_prefix(1);
        break;
      }
      std::size_t k = 0;
      while (k < line.size() && IsMetricChar(line[k]) && line[k] != ':') ++k;
      std::string_view label_name = line.substr(0, k);
      if (label_name.empty()) return Fail("bad label name");
      line = SkipBlanks(line.substr(k));
      if (line.empty() || line.front() != '=')
        return Fail("expected '=' after label " + std::string(label_name));
      line = SkipBlanks(line.substr(1));
      if (line.empty() || line.front() != '"')
        return Fail("expected '\"' to open the value of label " + std::string(label_name));
      line.remove_prefix(1);
      if (sample_.labels.size() <= used) sample_.labels.emplace_back();
      ParsedLabel& l = sample_.labels[used++];
      l.name.assign(label_name);
      l.value.clear();
      bool closed = false;
      while (!line.empty()) {
        char c = line.front();
        line.remove_prefix(1);
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          l.value += c;
          continue;
        }
        if (line.empty()) break;
        char e = line.front();
        line.remove_prefix(1);
        if (e == '\\' || e == '"') {
          l.value += e;
        } else if (e == 'n') {
          l.value += '\n';
        } else {
          return Fail(std::string("invalid escape \\") + e + " in label " + l.name);
        }
      }
      if (!closed) return Fail("unterminated value of label " + l.name);
      for (std::size_t i = 0; i + 1 < used; ++i) {
        if (sample_.labels[i].name == l.name) return Fail("duplicate label " + l.name);
      }
      line = SkipBlanks(line);
      if (!line.empty() && line.front() == ',')
        line.remove_prefix(1);
      else if (line.empty() || line.front() != '}')
        return Fail("expected ',' or '}' after label " + l.name);
    }
  }
  sample_.labels.resize(used);
  line = SkipBlanks(line);
  std::string_view value = TakeToken(line);
  auto v = ParseValue(value);
  if (!v)
    return Fail("bad sample value \"" + std::string(value) + "\" for " + std::string(sample_.name));
  sample_.value = *v;
  sample_.timestamp_ms.reset();
  line = SkipBlanks(line);
  if (!line.empty()) {
    std::string_view ts = TakeToken(line);
    std::int64_t t = 0;
    auto [end, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
    if (ec != std::errc() || end != ts.data() + ts.size())
      return Fail("bad timestamp \"" + std::string(ts) + "\"");
    sample_.timestamp_ms = t;
    if (!SkipBlanks(line).empty()) return Fail("unexpected text after the timestamp");
  }
  if (cb_.on_sample) cb_.on_sample(sample_);
  return Status::Ok();
}

Status ParseExposition(std::string_view body, ParseCallbacks callbacks) {
  Parser p(std::move(callbacks));
  if (Status s = p.Feed(body); !s) return s;
  return p.Finish();
}

}  // namespace gpulse::prom
