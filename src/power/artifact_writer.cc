#include "power/artifact_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "power/contract.h"

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

std::string CsvField(std::string_view v) {
  if (v.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

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

Status AtomicWriteJson(const fs::path& path, const Json& doc, int indent) {
  std::string text = doc.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n";
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return IoError("cannot create a temp file in " + dir.string(), errno);
  // mkstemp creates 0600; every artifact of a package has one mode, 0644 like samples.csv.
  Status s = ::fchmod(fd, 0644) == 0 ? WriteAll(fd, text) : IoError("cannot chmod " + tmpl, errno);
  int err = s.ok() ? 0 : ErrnoOf(s);
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmpl.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmpl.c_str());
    return IoError("cannot write " + path.string(), err);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: the rename itself already happened
    ::close(dfd);
  }
  return Status::Ok();
}

std::string FormatSampleRow(const SampleRecord& r) {
  return fmt::format("{},{},{},{},{},{},{}\n", kSchemaVersion, r.timestamp_unix, r.scrape_seq,
                     CsvField(r.hostname), r.gpu_index, CsvField(r.gpu_uuid), r.power_w);
}

Result<SamplesWriter> SamplesWriter::Create(const fs::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create " + path.string(), errno);
  SamplesWriter w(fd, 0);
  std::string header = std::string(kSamplesHeader) + "\n";
  if (Status s = WriteAll(fd, header); !s.ok()) {
    int err = ErrnoOf(s);
    (void)w.Close();  // the handle is closed even when the header write fails
    return IoError("cannot write the header of " + path.string(), err);
  }
  w.size_ = header.size();
  return w;
}

SamplesWriter::SamplesWriter(SamplesWriter&& o) noexcept
    : fd_(o.fd_), size_(o.size_), rows_(o.rows_) {
  o.fd_ = -1;
}

SamplesWriter::~SamplesWriter() { (void)Close(); }

Status SamplesWriter::Append(const std::vector<SampleRecord>& rows) {
  if (fd_ < 0) return Error{ErrorCode::kIo, "EBADF: samples.csv is closed"};
  std::string batch;
  for (const auto& r : rows) batch += FormatSampleRow(r);
  Status s = WriteAll(fd_, batch);
  if (!s.ok()) {
    int err = ErrnoOf(s);
    if (::ftruncate(fd_, static_cast<off_t>(size_)) == 0) ::lseek(fd_, 0, SEEK_END);
    return IoError("cannot append to samples.csv", err);
  }
  size_ += batch.size();
  rows_ += static_cast<int64_t>(rows.size());
  return Status::Ok();
}

Status SamplesWriter::Close() {
  if (fd_ < 0) return Status::Ok();
  int err = ::fsync(fd_) != 0 ? errno : 0;
  if (::close(fd_) != 0 && !err) err = errno;
  fd_ = -1;
  if (err) return IoError("cannot close samples.csv", err);
  return Status::Ok();
}

}  // namespace gpulse::power
