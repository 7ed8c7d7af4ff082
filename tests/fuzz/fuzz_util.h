// Helpers shared by the fuzz targets (docs/fuzzing.md): the input as text, a check that aborts
// with the condition (libFuzzer then saves the input as a crash reproducer), and one scratch file
// per process for the readers that only take a path.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpulse::fuzz {

inline std::string_view Text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void Fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, file, line);
  std::abort();
}

// Equal, or both NaN (the parsers keep NaN as a value).
inline bool SameDouble(double a, double b) { return a == b || (a != a && b != b); }
inline bool SameOpt(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || SameDouble(*a, *b));
}

// A file or directory that is this process's alone, "gpulse-fuzz-<pid>-<name>", removed when the
// process exits normally (a crash leaves it behind). It lives under $GPULSE_FUZZ_TMPDIR, else
// /dev/shm, else /tmp: rewriting a file in place on a disk file system (ext4 flushes a file that
// was truncated and rewritten when it is closed) costs milliseconds, on tmpfs microseconds.
class Scratch {
 public:
  explicit Scratch(std::string_view name) {
    const char* dir = std::getenv("GPULSE_FUZZ_TMPDIR");
    std::string base = dir && *dir ? dir : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = base + "/gpulse-fuzz-" + std::to_string(getpid()) + "-" + std::string(name);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Replaces the file at `path` with `bytes`; aborts when it cannot (a full disk is not a finding).
inline void WriteScratch(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) {
      std::perror(path.c_str());
      std::abort();
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
}

// Standard base64 with padding: an independent encoder the decoders are checked against.
inline std::string Base64Encode(std::string_view in) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    unsigned n = static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kDigits[(n >> 18) & 63];
    out += kDigits[(n >> 12) & 63];
    out += i + 1 < in.size() ? kDigits[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kDigits[n & 63] : '=';
  }
  return out;
}

}  // namespace gpulse::fuzz

#define FUZZ_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::gpulse::fuzz::Fail(#cond, __FILE__, __LINE__))
