// The control socket: a thread of the runtime that serves `callscope ctl`
// requests on <dir>/<pid>.sock and writes the CALLSCOPE_INTERVAL snapshots.
//
// Security rests on two checks: the directory is ours alone and nobody else
// can steer the way to it (src/format/ctl_dir.h: a real directory, owned by
// our euid, mode 0700, every parent owned by root or us and not writable by
// others; else we serve nothing), and every peer is asked for its uid
// (SO_PEERCRED), which must be our euid now, or root's (root may trace and
// kill us anyway). The socket file itself is 0600 besides. The socket is made
// and removed relative to the directory's descriptor, never by path.
//
// A program that changes its euid (a server started as root whose workers
// become nobody) keeps the socket it made, in the directory of its first
// euid, where root finds it; and gets a second one in the directory of the
// new euid, for that user's ctl. glibc's setuid family changes every
// thread's credentials by a signal to each, which wakes this thread's poll:
// it then sees the new euid (and, while the process still could change it,
// looks once a second besides, for a change made just before it slept).
//
// The thread is started at process initialization and again in a fork child
// (threads do not survive fork). It runs with every signal blocked, so the
// program's handlers never run on it, and it runs no instrumented code, so no
// hook ever runs on it. Like the rest of the runtime it allocates nothing
// itself (pthread_create may: it is called from initialization, not a hook
// of ours); the operations it calls are profile.cpp's.
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "format/ctl_dir.h"
#include "runtime/control.h"
#include "runtime/path_buf.h"
#include "runtime/runtime.h"

namespace callscope::rt {
namespace {

// A silent or slow peer holds the control thread at most this long per read
// and per write of one request.
constexpr int kPeerTimeoutSec = 1;
// At exit, control_stop waits at most this long for an operation in progress
// (a dump of a big tree) before going on without it.
constexpr uint64_t kStopWaitNs = 10'000'000'000;
constexpr size_t kMaxRequest = 64;  // bytes of a request line, newline included

// A socket we listen on: the directory it is in, opened and checked
// (src/format/ctl_dir.h), its path (for messages only) and identity; the
// socket's name in it (empty when there is none) and identity.
struct Listener {
  int fd = -1;
  int dir_fd = -1;
  char dir[ctldir::kPathMax] = {};
  dev_t dir_dev = 0;
  ino_t dir_ino = 0;
  char name[32] = {};
  dev_t sock_dev = 0;
  ino_t sock_ino = 0;
  uid_t uid = 0;  // the euid it was made as: its directory's owner
};
// [kFirst]: made at start (and in a fork child), served to the end.
// [kChanged]: made by the control thread when the process changed its euid,
// in the directory of the new one; replaced at the next change, closed when
// the euid is the first one's again.
// constinit: the runtime may start (control_start) before any dynamic
// initializer has run, and must find fd -1 there, not a zero.
enum { kFirst = 0, kChanged = 1 };
constinit Listener g_sock[2];
uid_t g_served_euid = 0;  // the euid g_sock was last brought up to date for
// Scratch for control_start, which runs once at a time (initialization, or
// the only thread of a fork child): kept off the stack of whichever program
// thread happens to initialize the runtime.
ctldir::Candidates g_candidates;
ctldir::Scratch g_scratch;
char g_why[3 * ctldir::kPathMax];
char g_note[4 * ctldir::kPathMax];
int g_owner_pid = 0;    // the process that made g_sock
bool g_thread_running = false;
// control_stop sets g_stopping, then waits until g_busy is 0; the thread sets
// g_busy, then checks g_stopping, before every operation. Sequentially
// consistent, so one of the two always sees the other: after control_stop
// returns, no operation runs any more.
int g_stopping = 0;
int g_busy = 0;
int g_detach_done = 0;  // detached: the thread removes the socket and ends after its reply

CALLSCOPE_NOINSTR void close_dir(Listener& l) {
  if (l.dir_fd >= 0) ::close(l.dir_fd);
  l.dir_fd = -1;
}

CALLSCOPE_NOINSTR void write_all(int fd, const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, s, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

CALLSCOPE_NOINSTR void say(const char* prefix, const char* what) {
  iovec iov[3] = {{const_cast<char*>(prefix), strlen(prefix)},
                  {const_cast<char*>(what), strlen(what)},
                  {const_cast<char*>("\n"), 1}};
  ssize_t ignored = ::writev(2, iov, 3);
  (void)ignored;
}

constexpr const char* kSocketDisabled = "callscope: control socket disabled: ";

// Opens the socket directory of `euid` (made if missing) into l.dir_fd, its
// path in l.dir; false (with the reason in g_why) when no candidate is ours
// alone. When the first choice is refused and a later one is taken (another
// user made /tmp/callscope-UID first), says so.
CALLSCOPE_NOINSTR bool prepare_dir(Listener& l, uid_t euid) {
  ctldir::candidates(g_candidates, euid, setting);
  ctldir::Text why(g_why, sizeof g_why);
  for (int i = 0; i < g_candidates.count; ++i) {
    const char* dir = g_candidates.path[i];
    if (i > 0) why.add("; ");
    const size_t before = why.size();
    const int fd = ctldir::open_private_dir(dir, true, euid, g_scratch, why);
    if (fd < 0) continue;
    l.dir_fd = fd;
    ctldir::Text(l.dir, sizeof l.dir).add(dir);
    if (i > 0) {
      // g_why holds the refusals of the earlier candidates.
      g_why[before >= 2 ? before - 2 : before] = '\0';
      ctldir::Text note(g_note, sizeof g_note);
      note.add(dir).add(" instead: ").add(g_why);
      say("callscope: control socket in ", g_note);
    }
    return true;
  }
  if (!g_candidates.explicit_dir && g_candidates.count > 0) {
    ctldir::Text note(g_note, sizeof g_note);
    note.add(g_why).add(" (set CALLSCOPE_CTL_DIR to a directory of your own, for the program and for ctl)");
    memcpy(g_why, g_note, note.size() + 1);
  }
  return false;
}

// Makes <dir>/<pid>.sock in the directory of our euid and listens on it;
// false (having said why, after `disabled`) on failure. Every operation is
// relative to l.dir_fd, never by path: bind through /proc/self/fd/N/, which
// names the directory we opened and checked.
CALLSCOPE_NOINSTR bool open_socket(Listener& l, int pid, const char* disabled) {
  g_why[0] = '\0';
  l.uid = ::geteuid();
  l.name[0] = '\0';
  if (!prepare_dir(l, l.uid)) {
    say(disabled, g_why);
    return false;
  }
  ctldir::Text name(l.name, sizeof l.name);
  name.add_uint(static_cast<uint64_t>(pid)).add(".sock");
  ctldir::Text why(g_why, sizeof g_why);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ctldir::Text bind_path(addr.sun_path, sizeof addr.sun_path);
  ctldir::fd_path(bind_path, l.dir_fd, l.name);
  // Non-blocking: a client that gives up between poll and accept must not
  // leave accept waiting.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    why.add("cannot create a socket: ").add_error(errno);
    say(disabled, g_why);
    l.name[0] = '\0';
    close_dir(l);
    return false;
  }
  // bind() makes the file with the socket inode's mode less the umask; the
  // umask is the whole process's, so we change the inode, never the umask.
  ::fchmod(fd, 0600);
  // A socket of an earlier process with our pid: one that died without
  // removing it, or our own image before an exec.
  ::unlinkat(l.dir_fd, l.name, 0);
  struct stat st;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::fchmodat(l.dir_fd, l.name, 0600, 0) != 0 || ::listen(fd, 16) != 0 ||
      ::fstatat(l.dir_fd, l.name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    why.add("cannot listen on ").add(l.dir).add("/").add(l.name).add(": ").add_error(errno);
    say(disabled, g_why);
    ::unlinkat(l.dir_fd, l.name, 0);
    l.name[0] = '\0';
    ::close(fd);
    close_dir(l);
    return false;
  }
  l.sock_dev = st.st_dev;
  l.sock_ino = st.st_ino;
  if (::fstat(l.dir_fd, &st) == 0) {
    l.dir_dev = st.st_dev;
    l.dir_ino = st.st_ino;
  }
  l.fd = fd;
  return true;
}

// Removes our socket, relative to the directory we checked: never through
// a path another user could have changed since. Only the very file we made
// is removed: a program may have closed our descriptor (and the number may
// name another directory now), or a process with our pid in another pid
// namespace may have replaced the socket with its own. (After a change of
// euid the first one's directory may be closed to us: the file stays, and
// ctl or record removes it once we are gone.)
CALLSCOPE_NOINSTR void remove_socket(Listener& l) {
  if (l.dir_fd < 0 || !l.name[0]) return;
  struct stat st;
  if (::fstat(l.dir_fd, &st) == 0 && st.st_dev == l.dir_dev && st.st_ino == l.dir_ino &&
      ::fstatat(l.dir_fd, l.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
      st.st_dev == l.sock_dev && st.st_ino == l.sock_ino)
    ::unlinkat(l.dir_fd, l.name, 0);
  l.name[0] = '\0';
}

// Removes the socket and closes everything of it (the control thread's own
// sockets only: see control_stop for one a poll may be waiting on).
CALLSCOPE_NOINSTR void drop_socket(Listener& l) {
  remove_socket(l);
  if (l.fd >= 0) ::close(l.fd);
  l.fd = -1;
  close_dir(l);
}

CALLSCOPE_NOINSTR void remove_sockets() {
  for (Listener& l : g_sock) remove_socket(l);
}

// ---- the thread ------------------------------------------------------------

CALLSCOPE_NOINSTR bool begin_op() {
  __atomic_store_n(&g_busy, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&g_stopping, __ATOMIC_SEQ_CST) == 0) return true;
  __atomic_store_n(&g_busy, 0, __ATOMIC_SEQ_CST);
  return false;
}

CALLSCOPE_NOINSTR void end_op() { __atomic_store_n(&g_busy, 0, __ATOMIC_SEQ_CST); }

// Reads one request line into `req` (NUL-terminated, without the newline).
// A line is complete at its newline, or where the peer shut its side down;
// anything else (silence, a partial line at the timeout, too many bytes) is
// answered with an error, never taken for a command.
enum class ReadResult { kLine, kNothing, kTimeout, kTooLong };
CALLSCOPE_NOINSTR ReadResult read_request(int fd, char (&req)[kMaxRequest + 1]) {
  size_t n = 0;
  for (;;) {
    if (n == kMaxRequest) return ReadResult::kTooLong;
    ssize_t r = ::recv(fd, req + n, kMaxRequest - n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return n ? ReadResult::kTimeout : ReadResult::kNothing;
    if (r == 0) {
      if (n == 0) return ReadResult::kNothing;
      break;
    }
    const char* nl = static_cast<const char*>(memchr(req + n, '\n', static_cast<size_t>(r)));
    n += static_cast<size_t>(r);
    if (nl) {
      n = static_cast<size_t>(nl - req);
      break;
    }
  }
  if (n > 0 && req[n - 1] == '\r') --n;
  req[n] = '\0';
  return ReadResult::kLine;
}

// Answers one request; the reply ends where the connection closes.
CALLSCOPE_NOINSTR void answer(int fd, const char* req) {
  PathBuf reply;
  if (strcmp(req, "status") == 0) {
    static char text[4096];  // only this thread uses it
    size_t n = 0;
    if (begin_op()) {
      n = op_status(text, sizeof text);
      end_op();
    }
    if (n > 0) {
      write_all(fd, text, n);
      return;
    }
    reply.add("error: no status available (the process is exiting)\n");
  } else if (strcmp(req, "start") == 0 || strcmp(req, "stop") == 0 || strcmp(req, "clear") == 0) {
    if (!begin_op()) {
      reply.add("error: the process is exiting\n");
    } else {
      if (strcmp(req, "start") == 0)
        op_start();
      else if (strcmp(req, "stop") == 0)
        op_stop();
      else
        op_clear();
      end_op();
      reply.add("ok\n");
    }
  } else if (strcmp(req, "detach") == 0) {
    // callscope detach (and the end of callscope attach): the reply is
    // sent once the program has nothing of ours left in its slots and code;
    // then this thread ends.
    if (!begin_op()) {
      reply.add("error: the process is exiting\n");
    } else {
      const char* error = op_detach();
      end_op();
      if (error) {
        reply.add(error);
      } else {
        // Gone before the reply: whoever reads it may attach again at once,
        // and must not find this socket.
        remove_sockets();
        reply.add("ok detached\n");
        __atomic_store_n(&g_detach_done, 1, __ATOMIC_SEQ_CST);
      }
    }
  } else if (strcmp(req, "dump") == 0) {
    if (!begin_op()) {
      reply.add("error: the process is exiting\n");
    } else {
      const uint32_t k = op_dump(kDumpControl);
      end_op();
      if (k)
        reply.add("ok dump ").add_uint(k).add("\n");
      else
        reply.add("error: no snapshot written (not in profile mode?)\n");
    }
  } else {
    // Echo the request printable only: it goes to the user's terminal.
    char shown[kMaxRequest + 1];
    size_t i = 0;
    for (; req[i]; ++i) shown[i] = (req[i] >= 0x20 && req[i] < 0x7f) ? req[i] : '?';
    shown[i] = '\0';
    reply.add("error: unknown command '").add(shown).add("' (valid: start, stop, clear, dump, status, detach)\n");
  }
  write_all(fd, reply.c_str(), reply.size());
}

CALLSCOPE_NOINSTR void serve_one(int listen_fd) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  timeval tv{kPeerTimeoutSec, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  // The peer's uid must be our euid now (after a setuid, the new one's), or
  // root's: root may trace or kill us anyway, and a server started as root
  // is what it controls.
  const uid_t euid = ::geteuid();
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    static const char kUnknown[] = "error: refused: cannot identify the peer\n";
    write_all(fd, kUnknown, sizeof kUnknown - 1);
  } else if (cred.uid != euid && cred.uid != 0) {
    PathBuf reply;
    reply.add("error: refused: peer uid ").add_uint(cred.uid).add(" is not the owner (uid ").add_uint(euid);
    reply.add(euid == 0 ? ")\n" : ") nor root\n");
    write_all(fd, reply.c_str(), reply.size());
  } else {
    char req[kMaxRequest + 1];
    static const char kTimeout[] = "error: no complete request line within 1 s\n";
    static const char kTooLong[] = "error: request too long\n";
    switch (read_request(fd, req)) {
      case ReadResult::kLine: answer(fd, req); break;
      case ReadResult::kTimeout: write_all(fd, kTimeout, sizeof kTimeout - 1); break;
      case ReadResult::kTooLong: write_all(fd, kTooLong, sizeof kTooLong - 1); break;
      case ReadResult::kNothing: break;
    }
  }
  ::close(fd);
}

// Milliseconds until `deadline_ns` (mono), rounded up, for poll().
CALLSCOPE_NOINSTR int ms_until(uint64_t deadline_ns, uint64_t now_ns) {
  if (deadline_ns <= now_ns) return 0;
  const uint64_t ms = (deadline_ns - now_ns + 999'999) / 1'000'000;
  return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

// Whether `callscope attach` has ended: its pidfd (taken once, while its pid
// is surely its own) says so without mistaking a process that reused the
// pid for it; kill(pid, 0) on a kernel without pidfds.
int g_recorder_pidfd = -2;  // -2: not taken yet; closed at the detach
CALLSCOPE_NOINSTR bool recorder_gone() {
  if (g_recorder_pidfd == -2) g_recorder_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, g_recorder_pid, 0));
  if (g_recorder_pidfd < 0) return ::kill(g_recorder_pid, 0) != 0 && errno == ESRCH;
  pollfd p{g_recorder_pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

// dlpi_adds and dlpi_subs, the dynamic linker's counts of loads and unloads.
CALLSCOPE_NOINSTR int read_counts(dl_phdr_info* info, size_t, void* data) {
  auto* c = static_cast<unsigned long long*>(data);
  c[0] = info->dlpi_adds;
  c[1] = info->dlpi_subs;
  return 1;
}

CALLSCOPE_NOINSTR bool module_count_changed() {
  static unsigned long long seen[2] = {0, 0};
  unsigned long long now[2] = {0, 0};
  ::dl_iterate_phdr(read_counts, now);
  const bool changed = now[0] != seen[0] || now[1] != seen[1];
  seen[0] = now[0];
  seen[1] = now[1];
  return changed;
}

// Whether this process could still change its euid: it is root, or a
// set-user-ID program whose real, effective and saved uids differ.
CALLSCOPE_NOINSTR bool euid_may_change() {
  uid_t r = 0, e = 0, s = 0;
  if (::getresuid(&r, &e, &s) != 0) return false;
  return r == 0 || e == 0 || s == 0 || r != e || e != s;
}

// After a change of our euid: a socket in the new euid's directory too,
// where its user's ctl looks (the first one stays, for root); the one of
// an earlier change goes. `listening` says which of g_sock to poll.
CALLSCOPE_NOINSTR void follow_euid(int pid, bool (&listening)[2]) {
  const uid_t euid = ::geteuid();
  if (euid == g_served_euid) return;
  g_served_euid = euid;
  drop_socket(g_sock[kChanged]);
  listening[kChanged] = false;
  if (euid == g_sock[kFirst].uid) return;
  PathBuf disabled;
  disabled.add("callscope: control socket for uid ").add_uint(euid).add(" disabled: ");
  listening[kChanged] = open_socket(g_sock[kChanged], pid, disabled.c_str());
}

CALLSCOPE_NOINSTR void* control_main(void*) {
  // The runtime's own thread: the library calls it makes (and libc makes
  // for it, up to its end) are never the program's.
  current_thread()->in_hook = 1;
  // The sockets of g_sock we poll: not one control_stop shut down.
  bool listening[2] = {g_sock[kFirst].fd >= 0, false};
  const int pid = g_owner_pid;
  uint64_t next_dump = 0;  // mono ns; 0: no interval
  while (__atomic_load_n(&g_stopping, __ATOMIC_SEQ_CST) == 0) {
    if (begin_op()) {
      follow_euid(pid, listening);
      end_op();
    }
    // Read every time round: the interval may be set or changed while we run.
    const uint64_t interval = dump_interval_ns();
    const uint64_t now = mono_ns();
    if (interval == 0) {
      next_dump = 0;
      if (!listening[kFirst] && !listening[kChanged] && !g_attached) break;  // nothing left to do
    } else if (next_dump == 0) {
      next_dump = now + interval;
    } else if (now >= next_dump) {
      if (begin_op()) {
        op_dump(kDumpInterval);
        end_op();
      }
      next_dump += interval;
      // A dump that took longer than the interval: skip the missed ones.
      if (next_dump <= now) next_dump = mono_ns() + interval;
      continue;
    }
    pollfd p[2];
    int which[2];
    nfds_t count = 0;
    for (int i = 0; i < 2; ++i)
      if (listening[i]) {
        p[count] = pollfd{g_sock[i].fd, POLLIN, 0};
        which[count++] = i;
      }
    int timeout = next_dump ? ms_until(next_dump, now) : -1;
    // Attached: `callscope attach` is looked after every 100 ms. Killed, it
    // can neither detach nor drain: we detach ourselves.
    if (g_attached && (timeout < 0 || timeout > 100)) timeout = 100;
    // A setuid wakes us (EINTR), unless it came just before poll: looked
    // for once a second too, while the process may still make one.
    if ((timeout < 0 || timeout > 1000) && euid_may_change()) timeout = 1000;
    const int n = ::poll(p, count, timeout);
    if (g_attached && !detached() && recorder_gone() && begin_op()) {
      if (!op_detach()) __atomic_store_n(&g_detach_done, 1, __ATOMIC_SEQ_CST);
      end_op();
    }
    // Attached, a library can come without our dlopen wrapper: loaded by a
    // dlopen already in progress at the attach, or through a pointer the
    // program took before. Looked for here too, every time round (a module
    // the dynamic linker was still relocating is taken up once it is done).
    if (g_attached && !detached() && begin_op()) {
      modules_changed(module_count_changed(), false);
      end_op();
    }
    for (nfds_t k = 0; n > 0 && k < count; ++k)
      if ((p[k].revents & POLLIN) && !__atomic_load_n(&g_detach_done, __ATOMIC_SEQ_CST)) serve_one(p[k].fd);
    if (__atomic_load_n(&g_detach_done, __ATOMIC_SEQ_CST)) {
      __atomic_store_n(&g_stopping, 1, __ATOMIC_SEQ_CST);
      for (Listener& l : g_sock) drop_socket(l);
      if (g_recorder_pidfd >= 0) ::close(g_recorder_pidfd);
      g_recorder_pidfd = -1;
      break;
    }
    // Shut down (control_stop) or broken: stop listening, keep dumping.
    for (nfds_t k = 0; n > 0 && k < count; ++k)
      if (p[k].revents & (POLLERR | POLLHUP | POLLNVAL)) listening[which[k]] = false;
  }
  __atomic_store_n(&g_thread_running, false, __ATOMIC_RELEASE);
  return nullptr;
}

}  // namespace

void control_start() {
  const int saved_errno = errno;
  const int pid = ::getpid();
  if (g_owner_pid == pid && g_thread_running) {  // started already
    errno = saved_errno;
    return;
  }
  // In a fork child: the listening sockets are the parent's (it keeps
  // serving them), and its thread, whatever it was doing, does not exist
  // here.
  for (Listener& l : g_sock) {
    if (l.fd >= 0) ::close(l.fd);
    l.fd = -1;
    close_dir(l);
    l.name[0] = '\0';
  }
  g_thread_running = false;
  g_stopping = 0;
  g_busy = 0;
  g_owner_pid = pid;
  g_served_euid = ::geteuid();

  if (!open_socket(g_sock[kFirst], pid, kSocketDisabled) && dump_interval_ns() == 0 && !g_attached) {
    errno = saved_errno;
    return;
  }
  // Every signal blocked in the new thread (it inherits our mask): the
  // program's handlers must never run on it. glibc keeps its own internal
  // signals (cancellation, setxid) deliverable.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  ::pthread_attr_init(&attr);
  ::pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  g_thread_running = true;
  if (::pthread_create(&thread, &attr, control_main, nullptr) == 0) {
    ::pthread_setname_np(thread, "callscope-ctl");
  } else {
    g_thread_running = false;
    say(kSocketDisabled, "cannot start the control thread");
    drop_socket(g_sock[kFirst]);
  }
  ::pthread_attr_destroy(&attr);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved_errno;
}

bool control_serving() {
  return g_sock[kFirst].fd >= 0 && __atomic_load_n(&g_thread_running, __ATOMIC_ACQUIRE);
}

void control_stop() {
  const int saved_errno = errno;
  // Only the process that made the socket removes it: a fork child that
  // never started its own must not remove its parent's.
  if (g_owner_pid != ::getpid()) {
    errno = saved_errno;
    return;
  }
  __atomic_store_n(&g_stopping, 1, __ATOMIC_SEQ_CST);
  // Let an operation in progress finish before the process tears down (and
  // before we touch g_sock: the thread replaces a socket as an operation).
  const uint64_t deadline = mono_ns() + kStopWaitNs;
  while (__atomic_load_n(&g_busy, __ATOMIC_SEQ_CST) && mono_ns() < deadline) {
    timespec ts{0, 1'000'000};
    ::nanosleep(&ts, nullptr);
  }
  remove_sockets();
  // Wake the thread from poll (it sees POLLHUP). The descriptors stay open:
  // closing one under the thread's poll could hand its number to a file of
  // the program's, which the thread would then accept on.
  for (Listener& l : g_sock)
    if (l.fd >= 0) ::shutdown(l.fd, SHUT_RDWR);
  errno = saved_errno;
}

}  // namespace callscope::rt
