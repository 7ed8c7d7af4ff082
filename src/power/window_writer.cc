#include "power/window_writer.h"

#include "power/artifact_writer.h"
#include "power/contract.h"

namespace gpulse::power {
namespace fs = std::filesystem;

Json WindowJson(const WindowStamp& w) {
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(); };
  Json j = Json::object();
  j["schema_version"] = kSchemaVersion;
  j["benchmark_type"] = w.benchmark_type;
  j["result_path"] = w.result_path;
  j["concurrency"] = w.concurrency;
  j["benchmark_start_time_unix"] = w.start_unix;
  j["benchmark_end_time_unix"] = opt(w.end_unix);
  j["duration"] = opt(w.duration_s);
  j["clock_source"] = kClockSource;
  j["status"] = w.status;
  j["reason"] = opt(w.reason);
  return j;
}

fs::path WindowFilePath(const fs::path& windows_dir, const std::string& result_path) {
  return windows_dir / (fs::path(result_path).stem().string() + ".json");
}

Result<std::string> RelativeResultPath(const fs::path& result_root, const fs::path& result) {
  std::error_code ec;
  fs::path root = fs::weakly_canonical(fs::absolute(result_root), ec);
  fs::path file = fs::weakly_canonical(fs::absolute(result), ec);
  if (ec) return InvalidArgument("cannot resolve " + result.string() + ": " + ec.message());
  std::string rel = file.lexically_relative(root).generic_string();
  if (!IsSafeRelativeSubpath(rel))
    return InvalidArgument("result " + result.string() + " is outside the result root " +
                           root.string());
  return rel;
}

Status WriteWindow(const fs::path& windows_dir, const WindowStamp& w) {
  return AtomicWriteJson(WindowFilePath(windows_dir, w.result_path), WindowJson(w));
}

Status StampResultFile(const fs::path& result_file, const WindowStamp& w) {
  auto doc = ReadJsonFile(result_file);
  if (!doc.ok()) return Error{doc.error().code, result_file.string() + ": " + doc.error().message};
  if (!doc->is_object()) return InvalidArgument(result_file.string() + " is not a JSON object");
  (*doc)["benchmark_start_time_unix"] = w.start_unix;
  (*doc)["benchmark_end_time_unix"] = *w.end_unix;
  (*doc)["duration"] = *w.duration_s;
  return AtomicWriteJson(result_file, *doc);
}

Result<std::vector<std::string>> ConvertRunningWindows(const fs::path& windows_dir) {
  std::vector<std::string> converted;
  std::error_code ec;
  auto st = fs::symlink_status(windows_dir, ec);
  if (ec || !fs::exists(st)) return converted;
  if (fs::is_symlink(st) || !fs::is_directory(st))
    return InvalidArgument(windows_dir.string() + " is not a plain directory");
  fs::directory_iterator it(windows_dir, ec);
  if (ec) return Error{ErrorCode::kIo, "cannot list " + windows_dir.string() + ": " + ec.message()};
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return Error{ErrorCode::kIo, "cannot list " + windows_dir.string()};
    auto est = it->symlink_status(ec);
    if (ec || !fs::is_regular_file(est) || it->path().extension() != ".json") continue;
    auto doc = ReadJsonFile(it->path());
    if (!doc.ok() || !doc->is_object() || doc->value("status", Json()) != "running") continue;
    (*doc)["status"] = "interrupted";
    (*doc)["reason"] = kInterruptedWindowReason;
    (*doc)["benchmark_end_time_unix"] = nullptr;
    (*doc)["duration"] = nullptr;
    if (Status s = AtomicWriteJson(it->path(), *doc); !s.ok()) return s.error();
    converted.push_back(it->path().filename().string());
  }
  return converted;
}

}  // namespace gpulse::power
