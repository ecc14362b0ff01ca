// `query -p PID` (query_attach.h).
#include "recorder/query_attach.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "format/finalize.h"
#include "format/live_wire.h"
#include "recorder/traced_process.h"

namespace callscope::recorder {
namespace {

constexpr const char* kSocketName = "query.sock";
constexpr const char* kHello = "callscope-query 1";
// A query this far behind is let go: the recording (and the program, which
// waits for it) must not hang on a query stopped or stuck. Seconds;
// CALLSCOPE_QUERY_TIMEOUT in record's environment says otherwise.
int send_timeout_s() {
  const char* e = ::getenv("CALLSCOPE_QUERY_TIMEOUT");
  const int v = e ? std::atoi(e) : 0;
  return v > 0 ? v : 30;
}

void set_timeout(int fd, int option, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

bool send_all(int fd, const char* p, size_t n) {
  while (n) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, char* p, size_t n) {
  while (n) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A line of at most 4 KiB, without its newline; false on a timeout or close.
bool read_line(int fd, std::string& line) {
  line.clear();
  char c = 0;
  while (line.size() < 4096) {
    const ssize_t r = ::read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    if (c == '\n') return true;
    line += c;
  }
  return false;
}

sockaddr_un address_of(const std::string& path, bool& fits) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  fits = path.size() < sizeof a.sun_path;
  if (fits) std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

}  // namespace

// --- the recorder's side --------------------------------------------------

class QueryServer::SocketTap final : public format::LiveTap {
 public:
  explicit SocketTap(Fd fd) : fd_(std::move(fd)) {}
  void deliver(format::LiveDelivery&& d) override {
    if (dead_) return;
    buf_.clear();
    format::encode_delivery(d, buf_);
    if (!send_all(fd_.get(), buf_.data(), buf_.size())) dead_ = true;
    // The chunks, for the tap to fill again (fresh memory faults, page by page).
    for (auto& [index, c] : d.events) {
      if (pool_.size() >= 64) break;
      c.clear();
      pool_.push_back(std::move(c));
    }
  }
  bool reuse(format::EventColumns& into) override {
    if (pool_.empty()) return false;
    into = std::move(pool_.back());
    pool_.pop_back();
    return true;
  }
  bool dead() const { return dead_; }
  bool send_line(const char* line) { return send_all(fd_.get(), line, std::strlen(line)); }

 private:
  Fd fd_;
  std::string buf_;
  std::vector<format::EventColumns> pool_;
  bool dead_ = false;
};

QueryServer::QueryServer(format::LiveStream& live) : live_(live) {}

std::unique_ptr<QueryServer> QueryServer::open(const std::string& session, format::LiveStream& live, bool events) {
  std::unique_ptr<QueryServer> s(new QueryServer(live));
  s->events_ = events;
  s->path_ = session + "/" + kSocketName;
  bool fits = false;
  const sockaddr_un a = address_of(s->path_, fits);
  if (!fits) return nullptr;
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return nullptr;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), 4) != 0)
    return nullptr;
  s->listen_ = std::move(fd);
  return s;
}

QueryServer::~QueryServer() {
  if (tap_) live_.clear_tap();
  if (listen_.get() >= 0) ::unlink(path_.c_str());
}

void QueryServer::add_poll_fds(std::vector<pollfd>& fds) const {
  fds.push_back({listen_.get(), POLLIN, 0});
  for (const Pending& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
}

void QueryServer::poll() {
  if (tap_ && tap_->dead()) {
    live_.clear_tap();
    tap_.reset();
  }
  for (;;) {
    const int c = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR) continue;
      break;
    }
    Fd fd(c);
    // The session is ours, its directory private; a peer that is not us
    // gets nothing all the same.
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) continue;
    pending_.push_back({std::move(fd), "", std::chrono::steady_clock::now() + std::chrono::seconds(2)});
  }
  // Hellos, read as they come: this thread drains the rings, and waits for
  // no one (a peer that says nothing is dropped after 2 s).
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < pending_.size();) {
    Pending& p = pending_[i];
    char buf[256];
    bool drop = now > p.deadline;
    for (;;) {
      const ssize_t r = ::recv(p.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) drop = true;
      if (r <= 0) break;
      p.got.append(buf, static_cast<size_t>(r));
    }
    const size_t nl = p.got.find('\n');
    if (nl != std::string::npos) {
      greet(std::move(p.fd), p.got.substr(0, nl));
      drop = true;
    } else if (p.got.size() > 1024) {
      drop = true;
    }
    if (drop) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void QueryServer::greet(Fd fd, const std::string& hello) {
  // From here the socket blocks, up to the send timeout.
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  set_timeout(fd.get(), SO_SNDTIMEO, send_timeout_s());
  auto refuse = [&](const std::string& why) {
    const std::string line = "error " + why + "\n";
    (void)send_all(fd.get(), line.data(), line.size());
  };
  std::istringstream in(hello);
  std::string word, version;
  double ticks_per_ns = 0;
  if (!(in >> word >> version >> ticks_per_ns) || word + " " + version != kHello || !(ticks_per_ns > 0.01) ||
      !(ticks_per_ns < 100))
    return refuse("not a query of this version of callscope");
  if (!events_)
    return refuse(
        "it is recorded in profile mode (record --mode=profile keeps call trees, not events); a query needs "
        "record --mode=record");
  if (live_.failed()) return refuse("its recorder cannot go on streaming (its stderr says why)");
  if (tap_) return refuse("another query is attached to its recording; one at a time");
  // Room for a few deliveries in flight (each a couple of milliseconds of
  // events): the recorder does not stop at each one for the query to read.
  const int bytes = 8 << 20;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  // The tap first, then the moment: every event stored after it is the
  // query's (a few from just before may be too).
  tap_ = std::make_unique<SocketTap>(std::move(fd));
  live_.set_tap(tap_.get(), live_.clock() == format::ClockKind::kTsc ? ticks_per_ns : 1.0, false);
  const uint64_t now = format::ticks_since(live_.clock(), live_.origin());
  char line[128];
  std::snprintf(line, sizeof line, "ok %d %llu %llu\n", live_.clock() == format::ClockKind::kTsc ? 1 : 0,
                static_cast<unsigned long long>(live_.origin()), static_cast<unsigned long long>(now));
  if (!tap_->send_line(line)) {
    live_.clear_tap();
    tap_.reset();
  }
}

// --- the query's side -----------------------------------------------------

Result<Attached> attach_to(pid_t pid, double ticks_per_ns) {
  const std::string p = std::to_string(pid);
  if (!process_exists(pid)) return Error("no process " + p);
  pid_t target = pid;
  if (is_recorder(pid)) {
    const std::vector<pid_t> children = traced_children(pid);
    if (children.empty())
      return Error("process " + p + " is `callscope record`, and the program it records has ended");
    if (children.size() > 1) return Error("process " + p + " is `callscope record`: give the pid of the program it records");
    target = children.front();
    std::fprintf(stderr, "callscope query: process %s is `callscope record`; attaching to the program it records, "
                         "process %d\n", p.c_str(), static_cast<int>(target));
  }
  const std::string t = std::to_string(target);
  // From the files of the session its runtime maps and holds open, not from
  // its environment, which the program may have written over.
  std::string unreadable;
  const std::string session = session_of(target, &unreadable);
  if (session.empty() && !unreadable.empty()) {
    if (::kill(target, 0) != 0 && errno == EPERM) return Error("process " + t + " belongs to another user");
    return Error("cannot tell whether process " + t + " is recorded: " + unreadable);
  }
  if (session.empty())
    return Error("process " + t +
                 " is not recorded by callscope (query -p attaches to a program that 'callscope record' runs; "
                 "to start one under a query, use -c)");
  Attached a;
  a.session = session;
  const std::string path = session + "/" + kSocketName;
  bool fits = false;
  const sockaddr_un addr = address_of(path, fits);
  if (!fits) return Error("the recording's socket path is too long: " + path);
  a.fd = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (a.fd.get() < 0) return system_error("socket", errno);
  if (::connect(a.fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ECONNREFUSED)
      return Error("the recording of process " + t + " takes no query (its recorder has ended, or is older than "
                   "query -p)");
    return system_error("cannot reach the recording of process " + t + " at " + path, e);
  }
  char hello[64];
  std::snprintf(hello, sizeof hello, "%s %.9g\n", kHello, ticks_per_ns);
  set_timeout(a.fd.get(), SO_RCVTIMEO, 5);
  std::string reply;
  if (!send_all(a.fd.get(), hello, std::strlen(hello)) || !read_line(a.fd.get(), reply))
    return Error("the recording of process " + t + " did not answer");
  set_timeout(a.fd.get(), SO_RCVTIMEO, 0);
  const int bytes = 8 << 20;
  ::setsockopt(a.fd.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  if (reply.rfind("error ", 0) == 0) return Error("cannot attach to process " + t + ": " + reply.substr(6));
  std::istringstream in(reply);
  std::string ok;
  int tsc = 0;
  unsigned long long origin = 0, now = 0;
  if (!(in >> ok >> tsc >> origin >> now) || ok != "ok")
    return Error("the recording of process " + t + " answered what this callscope cannot read: " + reply);
  a.clock = tsc ? format::ClockKind::kTsc : format::ClockKind::kMonotonic;
  a.origin = origin;
  a.now_tick = now;
  a.pid = target;
  return a;
}

Result<format::LiveDelivery> read_delivery(int fd, std::string& buffer, format::LiveTap* pool) {
  char header[format::kWireHeaderBytes];
  if (!read_all(fd, header, sizeof header)) return Error("closed");
  CALLSCOPE_TRY(const uint64_t n, format::wire_payload_bytes(std::string_view(header, sizeof header)));
  buffer.resize(n);
  if (!read_all(fd, buffer.data(), buffer.size())) return Error("closed in the middle of a message");
  return format::decode_delivery(buffer, pool);
}

}  // namespace callscope::recorder
