#include "common/files.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace callscope {

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return system_error("cannot open '" + path + "'", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return system_error("cannot stat '" + path + "'", e);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error("'" + path + "' is a directory");
  }
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(st.st_size));
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return system_error("cannot read '" + path + "'", e);
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

Status write_file_bytes(const std::string& path, const void* data, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return system_error("cannot create '" + path + "'", errno);
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return system_error("cannot write '" + path + "'", e);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return system_error("cannot write '" + path + "'", errno);
  return ok_status();
}

}  // namespace callscope
