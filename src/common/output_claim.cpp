#include "common/output_claim.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace callscope {
namespace {

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

Error busy(const std::string& path) {
  return Error("'" + path +
               "' is being written by another callscope (record or finish) right now; choose another name "
               "with -o (--force does not take a file another callscope is writing)");
}

}  // namespace

Result<std::unique_ptr<OutputClaim>> OutputClaim::take(const std::string& path, bool force, bool take_empty) {
  if (path.empty()) return Error("no output file given");
  const std::string dir = dir_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return system_error("cannot write '" + path + "': directory '" + dir + "'", errno);
  if (!S_ISDIR(st.st_mode)) return Error("cannot write '" + path + "': '" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) return system_error("cannot write '" + path + "'", errno);

  std::unique_ptr<OutputClaim> c(new OutputClaim());
  c->path_ = path;
  c->fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (c->fd_ >= 0) {
    c->created_ = true;
    // Another callscope that found the file between our create and lock
    // holds it now: it wins.
    if (::flock(c->fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(c->fd_);
      c->fd_ = -1;
      c->created_ = false;
      return busy(path);
    }
  } else {
    if (errno != EEXIST) return system_error("cannot create '" + path + "'", errno);
    if (::lstat(path.c_str(), &st) != 0) return system_error("cannot create '" + path + "'", errno);
    if (S_ISDIR(st.st_mode)) return Error("output '" + path + "' is a directory; give a file name with -o");
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      return Error("output '" + path +
                   "' exists and is not a regular file (a FIFO, socket or device); choose another name with -o");
    if (S_ISREG(st.st_mode)) {
      // O_NONBLOCK: never wait on a file that turned into a FIFO meanwhile.
      c->fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (c->fd_ >= 0) {
        if (::flock(c->fd_, LOCK_EX | LOCK_NB) != 0) return busy(path);
        if (::fstat(c->fd_, &st) != 0 || !S_ISREG(st.st_mode))
          return Error("output '" + path + "' is not a regular file; choose another name with -o");
      }
    }
    const bool leftover = take_empty && S_ISREG(st.st_mode) && st.st_size == 0;
    if (!force && !leftover) {
      std::string why = "output '" + path + "' exists";
      if (S_ISREG(st.st_mode) && st.st_size == 0)
        why += " (an empty file: a callscope record or finish that was killed leaves one)";
      return Error(why + "; use --force to overwrite it, or -o to choose another name");
    }
  }
  if (c->fd_ >= 0) {
    if (::fstat(c->fd_, &st) != 0) return system_error("cannot read '" + path + "'", errno);
  }
  c->dev_ = st.st_dev;
  c->ino_ = st.st_ino;
  // A file we created is empty: another program that wrote it between the
  // create and the stat (a busy machine) changed it all the same.
  c->size_ = c->created_ ? 0 : st.st_size;
  c->mtime_ns_ = mtime_ns(st);
  return c;
}

OutputClaim::~OutputClaim() {
  if (created_ && !published_ && unchanged()) ::unlink(path_.c_str());
  if (fd_ >= 0) ::close(fd_);  // and the lock with it
}

bool OutputClaim::unchanged() const {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) return false;
  return st.st_size == size_ && mtime_ns(st) == mtime_ns_;
}

Status OutputClaim::publish(const std::string& tmp) {
  struct stat st {};
  int rc;
  if (::lstat(path_.c_str(), &st) != 0 && errno == ENOENT) {
    // Someone removed it: take the name back, but replace nothing that
    // appears meanwhile.
    rc = ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE);
  } else if (unchanged()) {
    rc = ::rename(tmp.c_str(), path_.c_str());
  } else {
    conflict_ = true;
    return Error("'" + path_ + "' was changed by another program while callscope wrote the trace; it is left as it is, and the complete trace is in '" + tmp + "': rename it yourself");
  }
  if (rc != 0) {
    const int e = errno;
    if (e == EEXIST) conflict_ = true;
    return system_error("cannot rename '" + tmp + "' to '" + path_ + "'; the complete trace is in '" + tmp + "'", e);
  }
  published_ = true;
  return ok_status();
}

void OutputClaim::release_from_signal() const {
  struct stat st;
  if (!created_ || published_ || ::lstat(path_.c_str(), &st) != 0) return;
  if (st.st_dev == dev_ && st.st_ino == ino_ && st.st_size == 0) ::unlink(path_.c_str());
}

}  // namespace callscope
