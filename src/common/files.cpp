#include "common/files.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace callscope {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Error not_regular(const std::string& path, mode_t mode, std::string_view directory_hint) {
  std::string m = "'" + path + "' is " + kind_of(mode) + ", not a regular file";
  if (S_ISDIR(mode) && !directory_hint.empty()) return Error(m + " (" + std::string(directory_hint) + ")");
  if (S_ISFIFO(mode) || S_ISCHR(mode) || S_ISSOCK(mode))
    m += ": callscope reads regular files only (save what it carries to a file first)";
  return Error(m);
}

}  // namespace

Result<OpenedFile> open_regular_file(const std::string& path, std::string_view directory_hint) {
  // O_NONBLOCK: opening a FIFO that has no writer returns at once instead of
  // waiting for one; the type is checked on the descriptor itself, so a file
  // swapped between a stat and the open cannot slip through.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return not_regular(path, st.st_mode, directory_hint);
    return system_error("cannot open '" + path + "'", e);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return system_error("cannot stat '" + path + "'", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return not_regular(path, st.st_mode, directory_hint);
  }
  // Back to blocking reads (a regular file never blocks, but say what we mean).
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return OpenedFile{fd, static_cast<uint64_t>(st.st_size)};
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path) {
  CALLSCOPE_TRY(const OpenedFile f, open_regular_file(path));
  const int fd = f.fd;
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(f.size));
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
