#include "power/fixture.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gpulse::power::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/gpulse-power-XXXXXX";
  if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Restore permissions a test may have removed so the tree can be deleted.
  for (auto it = fs::recursive_directory_iterator(
           path_, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_symlink())
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  fs::permissions(path_ / "logs/power/windows", fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

std::string Sha256Hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += fmt::format("{:02x}", md[i]);
  return out;
}

std::string Repr(double v) { return fmt::format("{}", v); }

std::string CsvText(const std::vector<CsvRow>& rows) {
  std::string out =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n";
  for (const auto& r : rows)
    out += fmt::format("1,{},{},{},{},{},{}\n", Repr(r.t), r.seq, r.host, r.gpu, r.uuid,
                       Repr(r.power));
  return out;
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

Package::Package() {
  result_root = tmp.path() / "logs";
  power_dir = result_root / "power";
  fs::create_directories(power_dir / "windows");
}

std::string Package::CsvBytes() const { return csv_override ? *csv_override : CsvText(rows); }

void Package::Write() {
  std::string csv = CsvBytes();
  if (write_csv) WriteText(power_dir / "samples.csv", csv);
  if (refresh_digest) manifest["samples_sha256"] = Sha256Hex(csv);
  WriteText(power_dir / "manifest.json", manifest.dump(2));
  for (const auto& [name, doc] : windows) WriteText(power_dir / "windows" / name, doc.dump(2));
  for (const auto& [name, text] : raw_windows) WriteText(power_dir / "windows" / name, text);
  for (const auto& [path, doc] : results) WriteText(result_root / path, doc.dump(2));
}

Json WindowDoc(double start, double end, double duration, const std::string& result_path) {
  return {{"schema_version", 1},
          {"benchmark_type", "sa-bench"},
          {"result_path", result_path},
          {"concurrency", 4},
          {"benchmark_start_time_unix", start},
          {"benchmark_end_time_unix", end},
          {"duration", duration},
          {"clock_source", "head_node_unix_clock"},
          {"status", "completed"},
          {"reason", nullptr}};
}

Json ResultDoc(double start, double end, double duration) {
  return {{"benchmark_start_time_unix", start},
          {"benchmark_end_time_unix", end},
          {"duration", duration},
          {"completed", 400}};
}

void Package::RefreshEvidence() {
  // Per device: uuids, first/last time; per window: the largest gap of its bracketing sequence.
  std::map<std::pair<std::string, int64_t>, std::vector<const CsvRow*>> by_dev;
  for (const auto& r : rows) by_dev[{r.host, r.gpu}].push_back(&r);
  Json observed = Json::array();
  for (auto& [key, list] : by_dev) {
    std::vector<std::string> uuids;
    double first = list.front()->t, last = list.front()->t;
    for (const auto* r : list) {
      if (std::find(uuids.begin(), uuids.end(), r->uuid) == uuids.end()) uuids.push_back(r->uuid);
      first = std::min(first, r->t);
      last = std::max(last, r->t);
    }
    observed.push_back({{"hostname", key.first},
                        {"gpu_index", key.second},
                        {"gpu_uuids", uuids},
                        {"first_sample_time_unix", first},
                        {"last_sample_time_unix", last}});
  }
  manifest["observed_devices"] = observed;
  manifest["sample_row_count"] = rows.size();
  int64_t max_seq = -1;
  for (const auto& r : rows) max_seq = std::max(max_seq, r.seq);
  manifest["scrape_count"] = max_seq + 1;
  Json validations = Json::array();
  for (const auto& [name, w] : windows) {
    double s = w["benchmark_start_time_unix"], e = w["benchmark_end_time_unix"];
    Json gaps = Json::object();
    for (auto& [key, list] : by_dev) {
      std::vector<double> ts;
      for (const auto* r : list) ts.push_back(r->t);
      std::sort(ts.begin(), ts.end());
      std::vector<double> seq;
      for (double t : ts)
        if (t <= s) {
          seq.assign(1, t);
        }
      for (double t : ts)
        if (t > s && t < e) seq.push_back(t);
      for (double t : ts)
        if (t >= e) {
          seq.push_back(t);
          break;
        }
      double gap = 0;
      for (size_t i = 1; i < seq.size(); ++i) gap = std::max(gap, seq[i] - seq[i - 1]);
      gaps[key.first + "/" + list.front()->uuid] = gap;
    }
    validations.push_back({{"benchmark_type", w["benchmark_type"]},
                           {"concurrency", w["concurrency"]},
                           {"window_file", "windows/" + name},
                           {"power_coverage_valid", true},
                           {"reason_codes", Json::array()},
                           {"per_device_max_sample_gap_seconds", gaps}});
  }
  manifest["window_validations"] = validations;
}

void BuildValid1P1D(Package& p, int seconds) {
  Json devices = Json::array();
  int64_t seq_hosts = 0;
  for (const char* host : {"node-a", "node-b"}) {
    bool prefill = std::string(host) == "node-a";
    for (int gpu = 0; gpu < 4; ++gpu)
      devices.push_back({{"hostname", host},
                         {"gpu_index", gpu},
                         {"assignments",
                          {{{"worker_role", prefill ? "prefill" : "decode"},
                            {"worker_index", 0},
                            {"worker_process", gpu},
                            {"het_group", prefill ? 0 : 1}}}}});
    ++seq_hosts;
  }
  p.rows.clear();
  for (int i = 0; i <= seconds; ++i)
    for (const char* host : {"node-a", "node-b"})
      for (int gpu = 0; gpu < 4; ++gpu)
        p.rows.push_back({i, kT0 + i, host, gpu, fmt::format("GPU-{}-{}", host, gpu),
                          100.0 + 10 * gpu + (std::string(host) == "node-b" ? 50 : 0)});
  p.manifest = {
      {"schema_version", 1},
      {"producer", "srt-slurm.dcgm-power"},
      {"producer_version", "0.1.0"},
      {"producer_git_commit", "0123456789abcdef0123456789abcdef01234567"},
      {"source_metric", "DCGM_FI_DEV_POWER_USAGE"},
      {"unit", "W"},
      {"power_scope", "gpu_device_board_as_reported_by_dcgm"},
      {"timestamp_source", "head_node_unix_clock"},
      {"job_id", "12345"},
      {"run_name", "canary-1p1d"},
      {"sample_interval_seconds", 1.0},
      {"request_timeout_seconds", 2.0},
      {"max_scrape_duration_seconds", 0.05},
      {"required", true},
      {"started_at_unix", kT0 - 1},
      {"stopped_at_unix", kT0 + seconds + 1},
      {"status", "complete"},
      {"publication_valid", true},
      {"dcgm_exporter",
       {{"container_image_resolved", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5"},
        {"container_image_sha256", nullptr},
        {"port", 9401},
        {"command", "dcgm-exporter --collect-interval=100 --address :9401"}}},
      {"expected_devices", devices},
      {"expected_windows", {{{"benchmark_type", "sa-bench"}, {"concurrency", 4}}}},
      {"artifact_errors", Json::array()},
      {"reason_codes", Json::array()},
  };
  double s = kT0 + 10.25, e = kT0 + 70.25;
  p.windows.clear();
  p.results.clear();
  p.windows["result_c4.json"] = WindowDoc(s, e, 60.0, "sa-bench/result_c4.json");
  p.results["sa-bench/result_c4.json"] = ResultDoc(s, e, 60.0);
  p.RefreshEvidence();
}

}  // namespace gpulse::power::testing
