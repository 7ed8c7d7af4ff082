// The Prometheus text exposition parser (src/prom/parser.h) over a whole body. Beyond "no crash, no
// sanitizer report", every sample it accepts must survive a round trip: written back with the
// exposition writer's escaping (src/prom/writer.h) and parsed again, it gives the same name,
// labels, value (bit for bit, NaN as NaN) and timestamp; so must every HELP text (one without a
// carriage return: the writer never writes one, and a trailing one is the line ending's). A label
// value that is not UTF-8 comes back as the writer writes it: each bad byte replaced by U+FFFD.
#include <cmath>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "fuzz/fuzz_util.h"
#include "prom/parser.h"
#include "prom/writer.h"

using namespace gpulse;

namespace {

struct Sample {
  std::string name;
  std::vector<prom::ParsedLabel> labels;
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;
};

Sample Copy(const prom::ParsedSample& s) {
  Sample c{std::string(s.name), s.labels, s.value, s.timestamp_ms};
  for (auto& l : c.labels)
    if (!IsValidUtf8(l.value)) l.value = ReplaceInvalidUtf8(l.value);
  return c;
}

bool Same(const Sample& a, const Sample& b) {
  if (a.name != b.name || a.labels.size() != b.labels.size() || a.timestamp_ms != b.timestamp_ms ||
      !fuzz::SameDouble(a.value, b.value) ||
      (!std::isnan(a.value) && std::signbit(a.value) != std::signbit(b.value)))
    return false;
  for (std::size_t i = 0; i < a.labels.size(); ++i)
    if (a.labels[i].name != b.labels[i].name || a.labels[i].value != b.labels[i].value)
      return false;
  return true;
}

std::string Render(const Sample& s) {
  std::string line = s.name;
  if (!s.labels.empty()) {
    line += '{';
    for (std::size_t i = 0; i < s.labels.size(); ++i) {
      if (i) line += ',';
      line += s.labels[i].name + "=\"";
      prom::AppendEscapedLabelValue(line, s.labels[i].value);
      line += '"';
    }
    line += '}';
  }
  line += ' ';
  prom::AppendValue(line, s.value, prom::ValueFormat::kShortest);
  if (s.timestamp_ms) line += ' ' + std::to_string(*s.timestamp_ms);
  line += '\n';
  return line;
}

// Every sample rendered into one body, parsed again: the same samples in the same order.
void CheckRoundTrip(const std::vector<Sample>& samples) {
  std::string body;
  for (const Sample& s : samples) body += Render(s);
  std::vector<Sample> again;
  prom::ParseCallbacks cb;
  cb.on_sample = [&](const prom::ParsedSample& p) { again.push_back(Copy(p)); };
  Status st = prom::ParseExposition(body, std::move(cb));
  if (!st.ok()) std::fprintf(stderr, "re-parse failed: %s\n", st.error().message.c_str());
  FUZZ_CHECK(st.ok());
  FUZZ_CHECK(again.size() == samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) FUZZ_CHECK(Same(samples[i], again[i]));
}

// Likewise every HELP text without a carriage return.
void CheckHelpRoundTrip(const std::vector<std::pair<std::string, std::string>>& helps) {
  std::string text;
  std::vector<std::pair<std::string, std::string>> kept;
  for (const auto& [name, help] : helps) {
    if (help.find('\r') != std::string::npos) continue;
    text += "# HELP " + name + " ";
    prom::AppendEscapedHelp(text, help);
    text += '\n';
    kept.emplace_back(name, help);
  }
  std::size_t i = 0;
  prom::ParseCallbacks cb;
  cb.on_help = [&](std::string_view n, std::string_view h) {
    FUZZ_CHECK(i < kept.size());
    FUZZ_CHECK(n == kept[i].first);
    FUZZ_CHECK(h == kept[i].second);
    ++i;
  };
  FUZZ_CHECK(prom::ParseExposition(text, std::move(cb)).ok());
  FUZZ_CHECK(i == kept.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body = fuzz::Text(data, size);
  std::vector<Sample> samples;
  std::vector<std::pair<std::string, std::string>> helps;
  prom::ParseCallbacks cb;
  cb.on_help = [&](std::string_view n, std::string_view h) {
    FUZZ_CHECK(prom::IsValidMetricName(n));
    helps.emplace_back(n, h);
  };
  cb.on_type = [&](std::string_view n, std::string_view t) {
    FUZZ_CHECK(prom::IsValidMetricName(n));
  };
  cb.on_sample = [&](const prom::ParsedSample& s) {
    FUZZ_CHECK(prom::IsValidMetricName(s.name));
    for (std::size_t i = 0; i < s.labels.size(); ++i) {
      FUZZ_CHECK(!s.labels[i].name.empty());
      for (std::size_t k = 0; k < i; ++k) FUZZ_CHECK(s.labels[k].name != s.labels[i].name);
      FUZZ_CHECK(s.Label(s.labels[i].name) == &s.labels[i].value);
    }
    samples.push_back(Copy(s));
  };
  Status st = prom::ParseExposition(body, std::move(cb));
  if (!st.ok()) FUZZ_CHECK(st.error().message.starts_with("line "));
  CheckRoundTrip(samples);
  CheckHelpRoundTrip(helps);
  // The value syntax on its own: whatever it accepts prints back to the same value.
  std::string_view token = body.substr(0, body.find_first_of(" \t\n"));
  if (auto v = prom::ParseValue(token)) {
    std::string printed;
    prom::AppendValue(printed, *v, prom::ValueFormat::kShortest);
    auto again = prom::ParseValue(printed);
    FUZZ_CHECK(again && fuzz::SameDouble(*v, *again));
  }
  return 0;
}
