#include "cli/ctl_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "format/ctl_dir.h"

namespace callscope::cli {

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

SocketSearch find_socket(pid_t pid) {
  SocketSearch s;
  s.name = std::to_string(pid) + ".sock";
  const uid_t euid = ::geteuid();
  auto cands = std::make_unique<ctldir::Candidates>();
  ctldir::candidates(*cands, euid);
  s.explicit_dir = cands->explicit_dir;
  auto scratch = std::make_unique<ctldir::Scratch>();
  std::string why_buf(3 * ctldir::kPathMax, '\0');
  for (int i = 0; i < cands->count && !s.found; ++i) {
    const std::string dir = cands->path[i];
    s.looked.push_back(dir + "/" + s.name);
    ctldir::Text why(why_buf.data(), why_buf.size());
    Fd fd(ctldir::open_private_dir(dir.c_str(), false, euid, *scratch, why));
    const bool safe = fd.get() >= 0;
    if (!safe) {
      // Not a directory we may act in; still one the program may have made
      // its socket in before it was opened up (ctl only talks to the
      // process asked about, as our uid, so connecting stays safe).
      struct stat st;
      if (::stat(dir.c_str(), &st) != 0) continue;  // absent: nothing to say
      s.unsafe.push_back(why.c_str());
      fd = Fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (fd.get() < 0) continue;
    }
    struct stat st;
    if (::fstatat(fd.get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    s.found = true;
    s.dir = dir;
    s.path = dir + "/" + s.name;
    s.dir_fd = std::move(fd);
    s.safe = safe;
  }
  return s;
}

int connect_socket(const SocketSearch& s) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ctldir::Text path(addr.sun_path, sizeof addr.sun_path);
  ctldir::fd_path(path, s.dir_fd.get(), s.name.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

bool remove_socket(const SocketSearch& s) {
  if (!s.found || !s.safe) return false;
  struct stat st;
  if (::fstatat(s.dir_fd.get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode) ||
      st.st_uid != ::geteuid())
    return false;
  return ::unlinkat(s.dir_fd.get(), s.name.c_str(), 0) == 0;
}

void remove_stale_socket(pid_t pid) { remove_socket(find_socket(pid)); }

}  // namespace callscope::cli
