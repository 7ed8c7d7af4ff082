#include "power/collector/artifact_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/csv.h"
#include "power/readers/contract.h"

namespace gpulse::power {
namespace fs = std::filesystem;
namespace {

Error IoError(const std::string& what, int err) {
  return {ErrorCode::kIo, ErrnoName(err) + ": " + what + ": " + std::strerror(err)};
}

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{ErrorCode::kIo, std::to_string(errno)};
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

int ErrnoOf(const Status& s) { return std::atoi(s.error().message.c_str()); }

}  // namespace

std::string ErrnoName(int err) {
  switch (err) {
    case EFBIG:
      return "EFBIG";
    case ENOSPC:
      return "ENOSPC";
    case EDQUOT:
      return "EDQUOT";
    case EIO:
      return "EIO";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EROFS:
      return "EROFS";
    case EBADF:
      return "EBADF";
    default:
      return "errno " + std::to_string(err);
  }
}

Status AtomicWriteJson(const sys::Dir& dir, std::string_view name, const Json& doc, int indent) {
  return dir.WriteAtomic(name, doc.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n");
}

Status AtomicWriteJson(const fs::path& path, const Json& doc, int indent) {
  auto at = sys::Dir::OpenParent(path);
  if (!at.ok()) return at.error();
  return AtomicWriteJson(at->first, at->second, doc, indent);
}

std::string FormatSampleRow(const SampleRecord& r) {
  return fmt::format("{},{},{},{},{},{},{}\n", kSchemaVersion, r.timestamp_unix, r.scrape_seq,
                     CsvField(r.hostname), r.gpu_index, CsvField(r.gpu_uuid), r.power_w);
}

Result<SamplesWriter> SamplesWriter::Create(const sys::Dir& dir, std::string_view name) {
  auto file = dir.OpenFile(name, sys::OpenMode::kCreateNew);
  if (!file.ok()) return file.error();
  SamplesWriter w(std::move(*file));
  std::string header = std::string(kSamplesHeader) + "\n";
  if (Status s = WriteAll(w.file_->get(), header); !s.ok()) {
    int err = ErrnoOf(s);
    (void)w.Close();  // the handle is closed even when the header write fails
    return IoError("cannot write the header of " + dir.PathOf(name), err);
  }
  w.size_ = header.size();
  return w;
}

Result<SamplesWriter> SamplesWriter::Create(const fs::path& path) {
  auto at = sys::Dir::OpenParent(path);
  if (!at.ok()) return at.error();
  return Create(at->first, at->second);
}

SamplesWriter::~SamplesWriter() { (void)Close(); }

Status SamplesWriter::Append(const std::vector<SampleRecord>& rows) {
  if (!file_) return Error{ErrorCode::kIo, "EBADF: samples.csv is closed"};
  int fd = file_->get();
  std::string batch;
  for (const auto& r : rows) batch += FormatSampleRow(r);
  Status s = WriteAll(fd, batch);
  if (!s.ok()) {
    int err = ErrnoOf(s);
    if (::ftruncate(fd, static_cast<off_t>(size_)) == 0) ::lseek(fd, 0, SEEK_END);
    return IoError("cannot append to samples.csv", err);
  }
  size_ += batch.size();
  rows_ += static_cast<int64_t>(rows.size());
  return Status::Ok();
}

Status SamplesWriter::Close() {
  if (!file_) return Status::Ok();
  int err = ::fsync(file_->get()) != 0 ? errno : 0;
  file_.reset();  // close(2) after a successful fsync has nothing left to report
  if (err) return IoError("cannot close samples.csv", err);
  return Status::Ok();
}

}  // namespace gpulse::power
