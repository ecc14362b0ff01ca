// Where the control sockets live, and how a directory is opened so that no
// other local user can steer what is made or removed in it.
//
// Shared by the runtime (src/runtime/control.cpp: makes and removes the
// socket) and the CLI (src/recorder/ctl_socket.cpp: `ctl` finds and connects to
// it, `ctl` and `record` remove stale ones), so both follow one rule. Like
// trace_format.h it is included by the runtime, so it is header-only, uses
// libc alone and never allocates (the runtime may not: the program's malloc
// can be interposed or instrumented); the caller provides every buffer.
//
// The rule (docs/ctl.md, "Where the socket is"):
//  - CALLSCOPE_CTL_DIR, when set, is the only directory;
//  - else /tmp/callscope-UID, then $XDG_RUNTIME_DIR/callscope, then
//    $HOME/.callscope-ctl: the first that is safe (another user can make
//    /tmp/callscope-UID first; the runtime then falls back and says so).
// A directory is safe when it is ours alone (owned by our euid, a real
// directory, mode 0700) and every directory on the way to it is owned by
// root or by us and not writable by others (unless sticky, as /tmp):
// otherwise another user could swap a component for a symbolic link between
// our check and our use. Symbolic links on the way are followed only when
// owned by root or by us (they live in safe directories, so nobody else can
// change them). The walk opens each component relative to the descriptor of
// the one before, and every later operation is relative to the descriptor
// it returns (openat, unlinkat, or /proc/self/fd/N/NAME for bind and
// connect), never by path.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CALLSCOPE_CTLDIR_FN inline __attribute__((no_instrument_function))

namespace callscope::ctldir {

constexpr size_t kPathMax = 4096;  // bytes of a path, NUL included
constexpr int kMaxCandidates = 3;
constexpr int kMaxSymlinks = 40;  // as the kernel's own path walk

// Text appended to a caller's buffer: truncates, never allocates.
class Text {
 public:
  CALLSCOPE_CTLDIR_FN Text(char* buf, size_t cap) : buf_(buf), cap_(cap) {
    if (cap_) buf_[0] = '\0';
  }
  CALLSCOPE_CTLDIR_FN Text& add(const char* s) {
    while (*s && n_ + 1 < cap_) buf_[n_++] = *s++;
    if (*s) truncated_ = true;
    if (cap_) buf_[n_] = '\0';
    return *this;
  }
  CALLSCOPE_CTLDIR_FN Text& add_uint(uint64_t v) {
    char tmp[24];
    int i = 0;
    do {
      tmp[i++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    char s[24];
    int j = 0;
    while (i) s[j++] = tmp[--i];
    s[j] = '\0';
    return add(s);
  }
  // "0755": the permission bits, with the sticky/setgid/setuid digit when set.
  CALLSCOPE_CTLDIR_FN Text& add_mode(unsigned mode) {
    char s[6];
    int j = 0;
    if (mode & 07000) s[j++] = static_cast<char>('0' + ((mode >> 9) & 7));
    else s[j++] = '0';
    s[j++] = static_cast<char>('0' + ((mode >> 6) & 7));
    s[j++] = static_cast<char>('0' + ((mode >> 3) & 7));
    s[j++] = static_cast<char>('0' + (mode & 7));
    s[j] = '\0';
    return add(s);
  }
  // strerror may allocate (message catalogs): these are the errors that
  // opening a directory or a socket meets.
  CALLSCOPE_CTLDIR_FN Text& add_error(int e) {
    const char* s = nullptr;
    switch (e) {
      case EACCES: s = "permission denied"; break;
      case EPERM: s = "operation not permitted"; break;
      case ENOENT: s = "no such file or directory"; break;
      case ENOTDIR: s = "a path component is not a directory"; break;
      case EROFS: s = "read-only file system"; break;
      case ENOSPC: s = "no space left on device"; break;
      case EMFILE:
      case ENFILE: s = "too many open files"; break;
      case EADDRINUSE: s = "address in use"; break;
      case ENAMETOOLONG: s = "file name too long"; break;
      case ELOOP: s = "too many symbolic links"; break;
      case ENOMEM: s = "out of memory"; break;
      case EAGAIN: s = "resource temporarily unavailable"; break;
      default: break;
    }
    if (s) return add(s);
    return add("errno ").add_uint(static_cast<uint64_t>(e));
  }
  // Drops the last "/component" (for "..").
  CALLSCOPE_CTLDIR_FN void pop_component() {
    while (n_ > 0 && buf_[n_ - 1] != '/') --n_;
    if (n_ > 0) --n_;
    if (cap_) buf_[n_] = '\0';
  }
  CALLSCOPE_CTLDIR_FN void clear() {
    n_ = 0;
    truncated_ = false;
    if (cap_) buf_[0] = '\0';
  }
  CALLSCOPE_CTLDIR_FN const char* c_str() const { return buf_; }
  CALLSCOPE_CTLDIR_FN size_t size() const { return n_; }
  CALLSCOPE_CTLDIR_FN bool truncated() const { return truncated_; }

 private:
  char* buf_;
  size_t cap_;
  size_t n_ = 0;
  bool truncated_ = false;
};

// The directories to look in, in order.
struct Candidates {
  char path[kMaxCandidates][kPathMax];
  int count = 0;
  bool explicit_dir = false;  // CALLSCOPE_CTL_DIR: the only one
};

// `get` reads a variable: the environment's (::getenv), or the runtime's
// settings under attach.
CALLSCOPE_CTLDIR_FN void candidates(Candidates& c, uid_t euid, const char* (*get)(const char*)) {
  c.count = 0;
  c.explicit_dir = false;
  auto push = [&](const char* a, const char* b, uint64_t n, bool with_n) {
    Text t(c.path[c.count], kPathMax);
    t.add(a).add(b);
    if (with_n) t.add_uint(n);
    if (!t.truncated()) ++c.count;
  };
  if (const char* env = get("CALLSCOPE_CTL_DIR"); env && env[0]) {
    push(env, "", 0, false);
    c.explicit_dir = true;
    return;
  }
  push("/tmp/callscope-", "", euid, true);
  // Only absolute values: a relative one would name a different place in
  // every working directory.
  if (const char* xdg = get("XDG_RUNTIME_DIR"); xdg && xdg[0] == '/') push(xdg, "/callscope", 0, false);
  if (const char* home = get("HOME"); home && home[0] == '/') push(home, "/.callscope-ctl", 0, false);
}

// Buffers of open_private_dir, kept by the caller (the runtime keeps them
// off the stack of whichever program thread initializes it).
struct Scratch {
  char rest[kPathMax];   // what is left to walk
  char link[kPathMax];   // a symbolic link's target; the working directory
  char shown[kPathMax];  // the directory reached so far, for messages
  char comp[256];        // one component (NAME_MAX 255)
};

namespace detail {

// `shown` is where we are: "" stands for "/".
CALLSCOPE_CTLDIR_FN const char* where(const Text& shown) { return shown.size() ? shown.c_str() : "/"; }

CALLSCOPE_CTLDIR_FN int open_root(const char* path, Text& why) {
  const int fd = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) why.add("cannot use ").add(path).add(": cannot open /: ").add_error(errno);
  return fd;
}

// A directory on the way: owned by root or us, and not writable by others
// unless sticky (whose entries only their owners may rename or remove; the
// entry we go through next is checked in turn).
CALLSCOPE_CTLDIR_FN bool ancestor_ok(int fd, const char* path, const Text& shown, uid_t euid, Text& why) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why.add("cannot use ").add(path).add(": ").add_error(errno);
    return false;
  }
  const bool foreign = st.st_uid != 0 && st.st_uid != euid;
  const bool open = (st.st_mode & 022) && !(st.st_mode & S_ISVTX);
  if (!foreign && !open) return true;
  why.add(path).add(": ").add(where(shown));
  if (foreign)
    why.add(" is owned by uid ").add_uint(st.st_uid).add(", not by root or by us (uid ").add_uint(euid).add(")");
  else
    why.add(" is writable by other users (mode ").add_mode(st.st_mode & 07777).add(", not sticky)");
  why.add(", so another user could replace what it holds; use a directory whose every parent belongs to root "
          "or to you and is not writable by others");
  return false;
}

// The directory itself: ours alone.
CALLSCOPE_CTLDIR_FN bool final_ok(int fd, const char* path, uid_t euid, Text& why) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why.add("cannot use ").add(path).add(": ").add_error(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    why.add(path).add(" is not a directory");
    return false;
  }
  if (st.st_uid != euid) {
    why.add(path).add(" is owned by uid ").add_uint(st.st_uid).add(", not by us (uid ").add_uint(euid).add(")");
    return false;
  }
  if (st.st_mode & 077) {
    why.add(path).add(" is open to other users (mode ").add_mode(st.st_mode & 0777).add("; it must be 0700)");
    return false;
  }
  return true;
}

}  // namespace detail

// Opens directory `path` (absolute, or relative to the working directory)
// for operations relative to it: an O_PATH descriptor, or -1 with the reason
// in `why` (which starts with `path` or "cannot ..."). With `create`, a
// missing last component is made, mode 0700 (its parent must exist).
CALLSCOPE_CTLDIR_FN int open_private_dir(const char* path, bool create, uid_t euid, Scratch& s, Text& why) {
  using namespace detail;
  if (!path[0]) {
    why.add("the directory name is empty");
    return -1;
  }
  Text rest(s.rest, sizeof s.rest);
  if (path[0] != '/') {
    if (!::getcwd(s.link, sizeof s.link)) {
      why.add("cannot use ").add(path).add(": cannot find the working directory: ").add_error(errno);
      return -1;
    }
    rest.add(s.link).add("/");
  }
  rest.add(path);
  if (rest.truncated()) {
    why.add("cannot use ").add(path).add(": ").add_error(ENAMETOOLONG);
    return -1;
  }
  Text shown(s.shown, sizeof s.shown);
  int fd = open_root(path, why);
  if (fd < 0) return -1;
  auto fail = [&]() {
    ::close(fd);
    return -1;
  };
  if (!ancestor_ok(fd, path, shown, euid, why)) return fail();
  size_t pos = 0;
  int links = 0;
  for (;;) {
    while (s.rest[pos] == '/') ++pos;
    if (!s.rest[pos]) break;
    size_t end = pos;
    while (s.rest[end] && s.rest[end] != '/') ++end;
    if (end - pos >= sizeof s.comp) {
      why.add("cannot use ").add(path).add(": ").add_error(ENAMETOOLONG);
      return fail();
    }
    memcpy(s.comp, s.rest + pos, end - pos);
    s.comp[end - pos] = '\0';
    pos = end;
    size_t after = pos;
    while (s.rest[after] == '/') ++after;
    const bool last = !s.rest[after];
    if (strcmp(s.comp, ".") == 0) continue;
    const bool dotdot = strcmp(s.comp, "..") == 0;
    if (last && create && !dotdot && ::mkdirat(fd, s.comp, 0700) != 0 && errno != EEXIST) {
      why.add("cannot create ").add(path).add(": ").add_error(errno);
      return fail();
    }
    struct stat st;
    if (::fstatat(fd, s.comp, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      why.add("cannot use ").add(path).add(": ").add_error(errno);
      return fail();
    }
    if (S_ISLNK(st.st_mode)) {
      if (last) {
        why.add(path).add(" is a symbolic link");
        return fail();
      }
      if (st.st_uid != 0 && st.st_uid != euid) {
        why.add(path).add(": ").add(shown.c_str()).add("/").add(s.comp).add(" is a symbolic link owned by uid ");
        why.add_uint(st.st_uid).add(", not by root or by us (uid ").add_uint(euid).add(")");
        return fail();
      }
      if (++links > kMaxSymlinks) {
        why.add("cannot use ").add(path).add(": ").add_error(ELOOP);
        return fail();
      }
      const ssize_t n = ::readlinkat(fd, s.comp, s.link, sizeof s.link - 1);
      if (n <= 0) {
        why.add("cannot use ").add(path).add(": ").add_error(n < 0 ? errno : ENOENT);
        return fail();
      }
      // rest = target + "/" + what followed the link.
      const size_t tail = strlen(s.rest + pos);
      if (static_cast<size_t>(n) + 1 + tail + 1 > sizeof s.rest) {
        why.add("cannot use ").add(path).add(": ").add_error(ENAMETOOLONG);
        return fail();
      }
      memmove(s.rest + n + 1, s.rest + pos, tail + 1);
      memcpy(s.rest, s.link, static_cast<size_t>(n));
      s.rest[n] = '/';
      pos = 0;
      if (s.link[0] == '/') {
        ::close(fd);
        shown.clear();
        fd = open_root(path, why);
        if (fd < 0) return -1;
        if (!ancestor_ok(fd, path, shown, euid, why)) return fail();
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      why.add(path).add(" is not a directory");
      return fail();
    }
    // O_NOFOLLOW: a component swapped for a link since fstatat is not
    // followed (and the fstat below sees no directory).
    const int next = ::openat(fd, s.comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      why.add("cannot use ").add(path).add(": ").add_error(errno);
      return fail();
    }
    ::close(fd);
    fd = next;
    if (dotdot)
      shown.pop_component();
    else
      shown.add("/").add(s.comp);
    if (!last && !ancestor_ok(fd, path, shown, euid, why)) return fail();
  }
  if (!final_ok(fd, path, euid, why)) return fail();
  return fd;
}

// "/proc/self/fd/N/NAME": a path that reaches NAME in the directory `dir_fd`
// refers to, whatever happened to the directory's own path since it was
// opened (for bind and connect, which take no descriptor).
CALLSCOPE_CTLDIR_FN void fd_path(Text& out, int dir_fd, const char* name) {
  out.clear();
  out.add("/proc/self/fd/").add_uint(static_cast<uint64_t>(dir_fd)).add("/").add(name);
}

}  // namespace callscope::ctldir
