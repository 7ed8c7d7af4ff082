#include "exporter/counters.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "sys/regular_file.h"

namespace gpulse::exporter {
namespace {

// dcgm-exporter's default counters file (etc/default-counters.csv), in its order, without the
// vGPU license status gpulse cannot read, plus the fields that file has commented out and the
// shipped alerts select (issue 40; docs/exporter.md, "The built-in set"): double-bit volatile ECC
// errors (311), retired pages (390-392) and the NVLink error counters (409, 419, 429, 439), at the
// places of their commented-out rows. deploy/default-counters.csv is this set, verbatim.
constexpr FieldId kDefaultFieldIds[] = {100, 101, 140, 150, 155, 156,  202,  203,  204,  206, 207,
                                        230, 251, 252, 253, 311, 390,  391,  392,  409,  419, 429,
                                        439, 449, 393, 394, 395, 1001, 1004, 1005, 1009, 1010};
constexpr FieldId kDefaultLabelIds[] = {1};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits one CSV line into fields: commas separate, a field may be enclosed in double quotes (then
// "" is a literal quote and commas are kept). Whitespace around fields is trimmed.
Result<std::vector<std::string>> SplitCsv(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (;;) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        field += line[i++];
      }
      if (!closed) return InvalidArgument("unterminated quoted field");
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i < line.size() && line[i] != ',') return InvalidArgument("text after a quoted field");
    } else {
      std::size_t comma = line.find(',', i);
      std::size_t end = comma == std::string_view::npos ? line.size() : comma;
      if (line.substr(i, end - i).find('"') != std::string_view::npos) {
        return InvalidArgument("a double quote inside an unquoted field");
      }
      field = std::string(Trim(line.substr(i, end - i)));
      i = end;
    }
    out.push_back(std::move(field));
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return out;
}

// The name as the catalogue spells the match (the DCGM name or the 4.6 alias).
// dcgm-exporter 1.x's family names, which its etc/1.x-compatibility-metrics.csv still uses (with
// -o, --use-old-namespace): each is one DCGM field, exported under the 1.x name as written.
struct LegacyName {
  std::string_view name;
  FieldId id;
};
constexpr LegacyName kLegacyNames[] = {
    {"dcgm_sm_clock", 100},
    {"dcgm_memory_clock", 101},
    {"dcgm_memory_temp", 140},
    {"dcgm_gpu_temp", 150},
    {"dcgm_power_usage", 155},
    {"dcgm_total_energy_consumption", 156},
    {"dcgm_pcie_replay_counter", 202},
    {"dcgm_gpu_utilization", 203},
    {"dcgm_mem_copy_utilization", 204},
    {"dcgm_enc_utilization", 206},
    {"dcgm_dec_utilization", 207},
    {"dcgm_xid_errors", 230},
    {"dcgm_power_violation", 240},
    {"dcgm_thermal_violation", 241},
    {"dcgm_sync_boost_violation", 242},
    {"dcgm_board_limit_violation", 243},
    {"dcgm_low_util_violation", 244},
    {"dcgm_reliability_violation", 245},
    {"dcgm_fb_free", 251},
    {"dcgm_fb_used", 252},
    {"dcgm_ecc_sbe_volatile_total", 310},
    {"dcgm_ecc_dbe_volatile_total", 311},
    {"dcgm_ecc_sbe_aggregate_total", 312},
    {"dcgm_ecc_dbe_aggregate_total", 313},
    {"dcgm_retired_pages_sbe", 390},
    {"dcgm_retired_pages_dbe", 391},
    {"dcgm_retired_pages_pending", 392},
    {"dcgm_nvlink_flit_crc_error_count_total", 409},
    {"dcgm_nvlink_data_crc_error_count_total", 419},
    {"dcgm_nvlink_replay_error_count_total", 429},
    {"dcgm_nvlink_recovery_error_count_total", 439},
    {"dcgm_nvlink_bandwidth_total", 449},
};

std::optional<FieldIndex> LegacyField(std::string_view name) {
  for (const LegacyName& l : kLegacyNames) {
    if (l.name == name) return IndexOf(l.id);
  }
  return std::nullopt;
}

std::string CanonicalSpelling(std::string_view written, std::string_view name,
                              std::string_view alias) {
  if (!alias.empty() && Lower(written) == Lower(alias)) return std::string(alias);
  return std::string(name);
}

class LineParser {
 public:
  LineParser(CounterSet& set, const std::string& origin) : set_(set), origin_(origin) {}

  Status Parse(std::size_t line_no, std::string_view raw) {
    line_no_ = line_no;
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') return Status::Ok();
    auto fields = SplitCsv(line);
    if (!fields) return Bad(fields.error().message);
    if (fields->size() != 3) {
      return Bad("expected 3 comma-separated fields (field, prometheus type, help), found " +
                 std::to_string(fields->size()));
    }
    // A name is an identifier: blanks around it are never part of it, quoted or not (a quoted name
    // ending in a form feed was kept as written and did not read back; found by fuzzing, issue 13).
    const std::string name(Trim((*fields)[0]));
    std::string type = Lower((*fields)[1]);
    const std::string& help = (*fields)[2];
    if (name.empty()) return Bad("empty field name");
    if (type != "gauge" && type != "counter" && type != "label") {
      return Bad("type \"" + (*fields)[1] + "\" of " + name + " is not gauge, counter or label");
    }
    if (type == "label") return AddLabel(name);
    return AddCounter(name, type == "counter" ? PromType::kCounter : PromType::kGauge, help);
  }

 private:
  Error Bad(const std::string& why) const {
    return InvalidArgument(origin_ + ":" + std::to_string(line_no_) + ": " + why);
  }

  bool Seen(std::string_view key) {
    std::string k = Lower(key);
    if (std::find(seen_.begin(), seen_.end(), k) != seen_.end()) return true;
    seen_.push_back(k);
    return false;
  }

  Status AddLabel(const std::string& name) {
    const LabelFieldSpec* label = FindLabelField(name);
    if (label == nullptr) {
      if (const UnreadableFieldSpec* u = FindUnreadableField(name)) return Skip(name, u->reason);
      if (FindField(name) && name.starts_with("DCGM_"))
        return Bad(name + " is a numeric field: its type must be gauge or counter");
      return Bad("unknown label field \"" + name + "\" (see `gpulse fields --format markdown`)");
    }
    if (Seen(label->name)) return Bad(std::string(label->name) + " is listed twice");
    set_.labels.push_back({label, CanonicalSpelling(name, label->name, label->alias)});
    return Status::Ok();
  }

  Status AddCounter(const std::string& name, PromType type, const std::string& help) {
    std::optional<FieldIndex> index;
    if (name.starts_with("DCGM_FI_") || name.starts_with("dcgm_fi_")) index = FindField(name);
    // dcgm-exporter 1.x's names, and its lower-case dcgm_fi_* names, keep their spelling as the
    // family name (the 1.x compatibility counters file).
    const bool legacy_spelling = name.starts_with("dcgm_");
    if (!index) index = LegacyField(name);
    if (!index) {
      if (const UnreadableFieldSpec* u = FindUnreadableField(name)) return Skip(name, u->reason);
      if (FindLabelField(name) != nullptr)
        return Bad(name + " is a string field: its type must be label");
      return Bad("unknown field \"" + name +
                 "\" (see `gpulse fields` for the fields gpulse reads)");
    }
    const FieldSpec& f = FieldAt(*index);
    if (Seen(f.name)) return Bad(std::string(f.name) + " is listed twice");
    set_.counters.push_back(
        {*index, legacy_spelling ? name : CanonicalSpelling(name, f.name, f.alias), type, help});
    return Status::Ok();
  }

  Status Skip(const std::string& name, std::string_view reason) {
    set_.warnings.push_back(origin_ + ":" + std::to_string(line_no_) + ": skipping " + name + ": " +
                            std::string(reason));
    return Status::Ok();
  }

  CounterSet& set_;
  const std::string& origin_;
  std::size_t line_no_ = 0;
  std::vector<std::string> seen_;
};

}  // namespace

std::vector<FieldIndex> CounterSet::ReadFields() const {
  std::vector<FieldIndex> out;
  for (const Counter& c : counters) out.push_back(c.field);
  if (auto xid = IndexOf(230); xid && std::find(out.begin(), out.end(), *xid) == out.end()) {
    out.push_back(*xid);
  }
  return out;
}

Result<CounterSet> ParseCounters(std::string_view text, const std::string& origin) {
  CounterSet set;
  set.origin = origin;
  LineParser parser(set, origin);
  std::size_t line_no = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (Status s = parser.Parse(++line_no, line); !s) return s.error();
  }
  if (set.counters.empty()) {
    return InvalidArgument(origin +
                           ": no field gpulse can read is listed (every line is a comment, "
                           "empty or skipped)");
  }
  return set;
}

Result<CounterSet> LoadCounters(const std::string& path) {
  // A regular file of at most 1 MiB, opened without blocking: a FIFO put in its place before a
  // SIGHUP reload must not stall the server, nor /dev/zero exhaust its memory.
  auto text = sys::ReadRegularFile(path);
  if (!text) return Error{text.error().code, "counters file " + text.error().message};
  return ParseCounters(*text, path);
}

CounterSet DefaultCounters() {
  CounterSet set;
  set.origin = "built-in default";
  for (FieldId id : kDefaultFieldIds) {
    FieldIndex i = *IndexOf(id);
    const FieldSpec& f = FieldAt(i);
    set.counters.push_back({i, std::string(f.name), f.prom_type, std::string(f.help)});
  }
  for (FieldId id : kDefaultLabelIds) {
    for (const LabelFieldSpec& l : AllLabelFields()) {
      if (l.id == id) set.labels.push_back({&l, std::string(l.name)});
    }
  }
  return set;
}

std::string FormatCounters(const CounterSet& set) {
  // Quoted when a comma, a quote or a blank at either end would not read back as written (unquoted
  // fields are trimmed; found by fuzzing, issue 13).
  auto quoted = [](const std::string& s) {
    bool edge_blank = !s.empty() && (std::isspace(static_cast<unsigned char>(s.front())) ||
                                     std::isspace(static_cast<unsigned char>(s.back())));
    if (s.find_first_of(",\"") == std::string::npos && !edge_blank) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out = "# Format: DCGM field, Prometheus metric type, help message\n";
  for (const Counter& c : set.counters) {
    out += c.name + ", " + std::string(PromTypeName(c.type)) + ", " + quoted(c.help) + "\n";
  }
  for (const LabelRow& l : set.labels) {
    out += l.name + ", label, " + quoted(std::string(l.field->help)) + "\n";
  }
  return out;
}

}  // namespace gpulse::exporter
