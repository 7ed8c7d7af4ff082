#include "power/readers/byte_source.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "power/readers/line_cutter.h"

namespace gpulse::power {
namespace {

class FileSource : public ByteSource {
 public:
  FileSource(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const override { return size_; }
  Result<size_t> ReadAt(uint64_t offset, char* buf, size_t n) const override {
    while (true) {
      ssize_t got = ::pread(fd_, buf, n, static_cast<off_t>(offset));
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return Error{ErrorCode::kIo, std::strerror(errno)};
    }
  }

 private:
  int fd_;
  uint64_t size_;
};

class MemSource : public ByteSource {
 public:
  explicit MemSource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Result<size_t> ReadAt(uint64_t offset, char* buf, size_t n) const override {
    if (offset >= bytes_.size()) return size_t{0};
    size_t k = std::min<uint64_t>(n, bytes_.size() - offset);
    std::memcpy(buf, bytes_.data() + offset, k);
    return k;
  }

 private:
  std::string_view bytes_;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenFileSource(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO in the package must be refused below, not waited on forever at open.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    ErrorCode code = errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
    return Error{code, path.string() + ": " + std::strerror(errno)};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{ErrorCode::kIo, path.string() + ": not a regular file"};
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<ByteSource>(new FileSource(fd, static_cast<uint64_t>(st.st_size)));
}

std::unique_ptr<ByteSource> MemorySource(std::string_view bytes) {
  return std::make_unique<MemSource>(bytes);
}

namespace {

// A hashing thread fed through a ring of read buffers: the reader fills a slot, publishes it and
// goes on to parse it while the thread hashes it; a slot is refilled once it has been hashed. The
// reader is the faster of the two, so it usually finds the ring full; it then sleeps until half the
// ring is free, so the threads wake each other once per half ring, not once per slot (on a busy
// machine every wake-up can cost a time slice).
class HashingThread {
 public:
  HashingThread(Sha256& sha, size_t slot_bytes) : sha_(sha) {
    for (auto& slot : slots_) slot.reset(new char[slot_bytes]);
    thread_ = std::thread([this] { Run(); });
  }
  ~HashingThread() { Close(); }
  HashingThread(const HashingThread&) = delete;
  HashingThread& operator=(const HashingThread&) = delete;

  // The next slot to fill.
  char* Acquire() {
    std::unique_lock lock(mu_);
    if (produced_ - hashed_ == kSlots) {
      reader_waits_ = true;
      cv_.wait(lock, [&] { return produced_ - hashed_ <= kSlots / 2; });
      reader_waits_ = false;
    }
    return slots_[produced_ % kSlots].get();
  }
  // Hands the first n bytes of the slot from Acquire() to the thread. The caller may keep reading
  // the slot until its next Acquire().
  void Publish(size_t n) {
    std::lock_guard lock(mu_);
    sizes_[produced_ % kSlots] = n;
    ++produced_;
    if (hasher_waits_) cv_.notify_all();
  }
  // Hashes what was published, then stops the thread.
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr uint64_t kSlots = 16;

  void Run() {
    std::unique_lock lock(mu_);
    while (true) {
      if (hashed_ == produced_ && !closed_) {
        hasher_waits_ = true;
        cv_.wait(lock, [&] { return hashed_ < produced_ || closed_; });
        hasher_waits_ = false;
      }
      if (hashed_ == produced_) return;  // closed and drained
      size_t k = hashed_ % kSlots;
      lock.unlock();
      sha_.Update(std::string_view(slots_[k].get(), sizes_[k]));
      lock.lock();
      ++hashed_;
      if (reader_waits_ && produced_ - hashed_ <= kSlots / 2) cv_.notify_all();
    }
  }

  Sha256& sha_;
  std::unique_ptr<char[]> slots_[kSlots];
  size_t sizes_[kSlots] = {};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t produced_ = 0, hashed_ = 0;
  bool reader_waits_ = false, hasher_waits_ = false, closed_ = false;
  std::thread thread_;
};

Status ReadHashingAside(const ByteSource& src, uint64_t begin, uint64_t end, size_t step,
                        LineCutter& cutter, Sha256& digest) {
  HashingThread hasher(digest, step);
  for (uint64_t offset = begin; offset < end;) {
    char* slot = hasher.Acquire();
    auto got = src.ReadAt(offset, slot, std::min<uint64_t>(step, end - offset));
    if (!got.ok()) return got.error();
    if (*got == 0) break;  // the file shrank under us: treat as its end
    hasher.Publish(*got);
    cutter.Feed(std::string_view(slot, *got));
    offset += *got;
  }
  cutter.Finish();
  return Status::Ok();
}

}  // namespace

Status ForEachBlock(const ByteSource& src, uint64_t begin, uint64_t end, size_t max_line_bytes,
                    const std::function<void(std::string_view)>& on_block,
                    const std::function<void()>& on_overlong, Sha256* digest, DigestOn where) {
  const size_t capacity = std::max<size_t>(max_line_bytes, 64);
  const size_t step = std::min(capacity, kReadStepBytes);
  LineCutter cutter(capacity, on_block, on_overlong);
  if (digest && where == DigestOn::kOwnThread)
    return ReadHashingAside(src, begin, end, step, cutter, *digest);
  std::unique_ptr<char[]> buf(new char[step]);
  for (uint64_t offset = begin; offset < end;) {
    auto got = src.ReadAt(offset, buf.get(), std::min<uint64_t>(step, end - offset));
    if (!got.ok()) return got.error();
    if (*got == 0) break;  // the file shrank under us: treat as its end
    std::string_view chunk(buf.get(), *got);
    if (digest) digest->Update(chunk);
    cutter.Feed(chunk);
    offset += *got;
  }
  cutter.Finish();
  return Status::Ok();
}

Status ForEachLine(const ByteSource& src, uint64_t begin, uint64_t end, size_t buffer_bytes,
                   const std::function<void(std::string_view, int64_t)>& on_line,
                   const std::function<void(int64_t)>& on_overlong, Sha256* digest) {
  int64_t line_no = 0;
  auto lines = [&](std::string_view block) {
    while (!block.empty()) {
      size_t nl = block.find('\n');
      on_line(block.substr(0, nl), ++line_no);
      block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
    }
  };
  return ForEachBlock(
      src, begin, end, buffer_bytes, lines, [&] { on_overlong(++line_no); }, digest);
}

Result<uint64_t> NextLineStart(const ByteSource& src, uint64_t offset) {
  char buf[65536];
  while (offset < src.size()) {
    auto got = src.ReadAt(offset, buf, sizeof buf);
    if (!got.ok()) return got.error();
    if (*got == 0) break;
    const char* nl = static_cast<const char*>(std::memchr(buf, '\n', *got));
    if (nl) return offset + static_cast<uint64_t>(nl - buf) + 1;
    offset += *got;
  }
  return src.size();
}

struct Sha256::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}
Sha256::~Sha256() = default;

void Sha256::Update(std::string_view bytes) {
  EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &n);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

Result<std::string> Sha256OfSource(const ByteSource& src) {
  std::unique_ptr<char[]> buf(new char[kReadStepBytes]);
  Sha256 sha;
  uint64_t offset = 0;
  while (true) {
    auto got = src.ReadAt(offset, buf.get(), kReadStepBytes);
    if (!got.ok()) return got.error();
    if (*got == 0) break;
    sha.Update(std::string_view(buf.get(), *got));
    offset += *got;
  }
  return sha.HexDigest();
}

}  // namespace gpulse::power
