#include "sys/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/fd.h"

namespace gpulse::sys {
namespace {

Error OpenError(const std::string& path, int err) {
  return ErrnoError(err, "\"" + path + "\" cannot be read: " + std::strerror(err));
}

}  // namespace

Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; it is refused below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return OpenError(path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return OpenError(path, errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument("\"" + path + "\" is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return InvalidArgument("\"" + path + "\" is " + std::to_string(st.st_size) + " bytes, more than the " +
                           std::to_string(max_bytes) + " bytes gpulse reads from such a file");
  }
  std::string out;
  out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return OpenError(path, errno);
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {  // grew while being read
      return InvalidArgument("\"" + path + "\" is larger than the " + std::to_string(max_bytes) +
                             " bytes gpulse reads from such a file");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace gpulse::sys
