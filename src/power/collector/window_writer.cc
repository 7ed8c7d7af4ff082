#include "power/collector/window_writer.h"

#include <algorithm>

#include "power/collector/artifact_writer.h"
#include "power/readers/contract.h"

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

std::string WindowFileName(const std::string& result_path) {
  return fs::path(result_path).stem().string() + ".json";
}

fs::path WindowFilePath(const fs::path& windows_dir, const std::string& result_path) {
  return windows_dir / WindowFileName(result_path);
}

Result<sys::Dir> OpenWindowsDir(const fs::path& windows_dir) {
  return sys::Dir::OpenNoFollow(windows_dir, /*create=*/false);
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

Status RefuseStemCollision(const sys::Dir& windows, const std::string& result_path) {
  std::string name = WindowFileName(result_path);
  auto type = windows.TypeOf(name);
  if (!type.ok()) return type.error();
  // Missing, or not a regular file (the write that follows refuses a link with its own message).
  if (*type != sys::EntryType::kRegular) return Status::Ok();
  auto text = windows.ReadFile(name, kMaxJsonFileBytes);
  auto doc = text.ok() ? ParseJsonText(*text) : Result<Json>(text.error());
  if (doc.ok() && doc->is_object() && doc->value("result_path", Json()) == result_path)
    return Status::Ok();  // this result's own window (end after begin, or a rerun)
  std::string other = doc.ok() && doc->is_object() && (*doc)["result_path"].is_string()
                          ? "the window of result " + (*doc)["result_path"].get<std::string>()
                          : "another window";
  return InvalidArgument(windows.PathOf(name) + " already holds " + other + "; result " +
                         result_path +
                         " has the same file name and its window would replace "
                         "that one: give every result a distinct file name");
}

Status WriteWindow(const sys::Dir& windows, const WindowStamp& w) {
  return AtomicWriteJson(windows, WindowFileName(w.result_path), WindowJson(w));
}

Status WriteWindow(const fs::path& windows_dir, const WindowStamp& w) {
  auto windows = OpenWindowsDir(windows_dir);
  if (!windows.ok()) return windows.error();
  return WriteWindow(*windows, w);
}

Status StampResultFile(const fs::path& result_file, const WindowStamp& w) {
  auto at = sys::Dir::OpenParent(result_file);
  if (!at.ok()) return at.error();
  const auto& [dir, name] = *at;
  auto text = dir.ReadFile(name, kMaxJsonFileBytes);
  if (!text.ok()) return text.error();
  auto doc = ParseJsonText(*text);
  if (!doc.ok()) return Error{doc.error().code, result_file.string() + ": " + doc.error().message};
  if (!doc->is_object()) return InvalidArgument(result_file.string() + " is not a JSON object");
  (*doc)["benchmark_start_time_unix"] = w.start_unix;
  (*doc)["benchmark_end_time_unix"] = *w.end_unix;
  (*doc)["duration"] = *w.duration_s;
  return AtomicWriteJson(dir, name, *doc);
}

Result<std::vector<std::string>> ConvertRunningWindows(const sys::Dir& windows) {
  auto names = windows.List();
  if (!names.ok()) return names.error();
  std::sort(names->begin(), names->end());
  std::vector<std::string> converted;
  for (const std::string& name : *names) {
    if (fs::path(name).extension() != ".json") continue;
    auto type = windows.TypeOf(name);
    if (!type.ok() || *type != sys::EntryType::kRegular) continue;  // links are left alone
    auto text = windows.ReadFile(name, kMaxJsonFileBytes);
    auto doc = text.ok() ? ParseJsonText(*text) : Result<Json>(text.error());
    if (!doc.ok() || !doc->is_object() || doc->value("status", Json()) != "running") continue;
    (*doc)["status"] = "interrupted";
    (*doc)["reason"] = kInterruptedWindowReason;
    (*doc)["benchmark_end_time_unix"] = nullptr;
    (*doc)["duration"] = nullptr;
    if (Status s = AtomicWriteJson(windows, name, *doc); !s.ok()) return s.error();
    converted.push_back(name);
  }
  return converted;
}

Result<std::vector<std::string>> ConvertRunningWindows(const fs::path& windows_dir) {
  auto windows = OpenWindowsDir(windows_dir);
  if (!windows.ok()) {
    if (windows.error().code == ErrorCode::kNotFound) return std::vector<std::string>{};
    return windows.error();
  }
  return ConvertRunningWindows(*windows);
}

}  // namespace gpulse::power
