// `callscope ctl` and the runtime's control socket: the socket is private
// (directory 0700, socket 0600, only our uid is served, an unsafe directory
// disables it), the requests get their replies, and every way of pointing
// ctl at the wrong thing gives one clear message and a non-zero exit.
//
// The traced program is the `server` fixture under `callscope record`: it
// stays alive until its stdin closes. Each test sets CALLSCOPE_CTL_DIR to a
// fresh directory, so the program's pid is the name of the one socket there.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string server_fixture() {
  const auto vs = variants();
  return vs.empty() ? "" : fixture(vs.front(), "server");
}

// A pid that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// Makes a Unix socket file at `path`, listening or not; returns its fd.
int make_socket(const std::string& path, bool listening) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path << ": " << std::strerror(errno);
  if (listening) {
    EXPECT_EQ(::listen(fd, 4), 0);
  }
  return fd;
}

// Sends `request` raw on the socket, shuts down our side, and returns the
// whole reply.
std::string raw_request(const std::string& path, const std::string& request) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    ::shutdown(fd, SHUT_WR);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

// The server fixture running under `callscope record`, with its own
// CALLSCOPE_CTL_DIR (e2e_support.h).
class TracedServer : public TracedProgram {
 public:
  explicit TracedServer(const std::string& ctl_dir, const std::vector<std::string>& env = {})
      : TracedProgram({server_fixture()}, ctl_dir, env) {}
};

class CtlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_fixture().empty()) GTEST_SKIP() << "no fixture variants";
  }
  TempDir base_;
  const std::string ctl_dir_ = base_.file("ctl");  // missing: the runtime makes it
};

// ---- the socket ------------------------------------------------------------

TEST_F(CtlTest, SocketIsPrivateAndRemovedAtExit) {
  TracedServer server(ctl_dir_);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string sock = ctl_dir_ + "/" + std::to_string(pid) + ".sock";
  struct stat st;
  ASSERT_EQ(::lstat(ctl_dir_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  ASSERT_EQ(::lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());

  RunResult r = ctl(ctl_dir_, {std::to_string(pid), "status"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "mode:")) << r.out;
  EXPECT_TRUE(contains(r.out, "threads:")) << r.out;

  EXPECT_EQ(server.command("work 10"), "done 10");
  EXPECT_EQ(server.finish(), 0) << server.err();
  EXPECT_EQ(::access(sock.c_str(), F_OK), -1) << "the socket outlived its program";
}

TEST_F(CtlTest, AnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  TracedServer server(ctl_dir_);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string sock = ctl_dir_ + "/" + std::to_string(pid) + ".sock";
  // Open the way to the socket, as a careless chmod would: the uid check
  // must still refuse.
  ASSERT_EQ(::chmod(base_.path().c_str(), 0711), 0);
  ASSERT_EQ(::chmod(ctl_dir_.c_str(), 0711), 0);
  ASSERT_EQ(::chmod(sock.c_str(), 0666), 0);

  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipefd[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(4);
    // The refusal may come before the request is sent: no SIGPIPE.
    ::send(fd, "clear\n", 6, MSG_NOSIGNAL);
    char buf[512];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
      if (::write(pipefd[1], buf, static_cast<size_t>(n)) != n) ::_exit(6);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string reply;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(reply, "error: refused: peer uid 65534 is not the owner (uid 0)\n");

  // The owner is still served.
  RunResult r = ctl(ctl_dir_, {std::to_string(pid), "status"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "threads:")) << r.out;
  EXPECT_EQ(server.finish(), 0) << server.err();
}

TEST_F(CtlTest, UnsafeDirectoryDisablesTheSocketNotTheProgram) {
  const std::string recursion = fixture(variants().front(), "recursion");
  // Open to others; a symbolic link to a good directory; not a directory.
  const std::string open_dir = base_.file("open");
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0755), 0);
  const std::string good_dir = base_.file("good");
  ASSERT_EQ(::mkdir(good_dir.c_str(), 0700), 0);
  const std::string link = base_.file("link");
  ASSERT_EQ(::symlink(good_dir.c_str(), link.c_str()), 0);
  const std::string file = base_.file("file");
  std::ofstream(file) << "x";
  const std::pair<std::string, std::string> cases[] = {
      {open_dir, open_dir + " is open to other users (mode 0755; it must be 0700)"},
      {link, link + " is a symbolic link"},
      {file, file + " is not a directory"},
  };
  for (const auto& [dir, why] : cases) {
    RunResult r = run({"env", "CALLSCOPE_CTL_DIR=" + dir, CALLSCOPE_EXE, "record", "--force", "-o",
                       base_.file("x.trace"), "--", recursion, "10"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "callscope: control socket disabled: " + why)) << r.err;
    EXPECT_EQ(summarize(base_.file("x.trace")).calls_of("recurse"), 11u);
  }
  DIR* d = ::opendir(good_dir.c_str());
  ASSERT_NE(d, nullptr);
  int entries = 0;
  while (::readdir(d)) ++entries;
  ::closedir(d);
  EXPECT_EQ(entries, 2) << "a socket was made through the symbolic link";
}

TEST_F(CtlTest, ForkChildServesItsOwnSocket) {
  // fork: parent and child each make a socket and remove it at exit.
  RunResult r = run({"env", "CALLSCOPE_CTL_DIR=" + ctl_dir_, CALLSCOPE_EXE, "record", "-o", base_.file("f.trace"),
                     "--", fixture(variants().front(), "fork")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "control socket disabled")) << r.err;
  DIR* d = ::opendir(ctl_dir_.c_str());
  ASSERT_NE(d, nullptr);
  std::string left;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') left += std::string(e->d_name) + " ";
  ::closedir(d);
  EXPECT_EQ(left, "") << "sockets left behind";
}

// ---- requests --------------------------------------------------------------

TEST_F(CtlTest, CommandsAndReplies) {
  TracedServer server(ctl_dir_);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string p = std::to_string(pid);
  const std::string sock = ctl_dir_ + "/" + p + ".sock";

  RunResult status = ctl(ctl_dir_, {p, "status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(contains(status.out, "mode:")) << status.out;
  EXPECT_TRUE(contains(status.out, "threads:")) << status.out;
  EXPECT_EQ(status.err, "");
  for (const char* c : {"stop", "start", "clear"}) {
    RunResult r = ctl(ctl_dir_, {p, c});
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
    EXPECT_EQ(r.out, "ok\n") << c;
  }
  // Not in profile mode: no snapshot.
  RunResult dump = ctl(ctl_dir_, {p, "dump"});
  EXPECT_EQ(dump.exit_code, 1);
  EXPECT_EQ(dump.out, "");
  EXPECT_EQ(dump.err, "callscope ctl: no snapshot written (not in profile mode?)\n");

  // The protocol as the runtime speaks it, without ctl's checks.
  EXPECT_EQ(raw_request(sock, "frobnicate\n"),
            "error: unknown command 'frobnicate' (valid: start, stop, clear, dump, status, detach)\n");
  EXPECT_EQ(raw_request(sock, "start\r\n"), "ok\n");
  EXPECT_EQ(raw_request(sock, std::string(100, 'x')), "error: request too long\n");
  EXPECT_TRUE(contains(raw_request(sock, "status"), "threads:")) << "a request ended by shutdown, not newline";

  EXPECT_EQ(server.command("work 5"), "done 5");
  EXPECT_EQ(server.finish(), 0) << server.err();
}

TEST_F(CtlTest, SilentPeerDoesNotBlockTheSocket) {
  TracedServer server(ctl_dir_);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string sock = ctl_dir_ + "/" + std::to_string(pid) + ".sock";
  // A peer that connects and says nothing, and one that stops mid-line.
  const int silent = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const int partial = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(partial, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::write(partial, "sto", 3), 3);

  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = ctl(ctl_dir_, {std::to_string(pid), "status"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "threads:")) << r.out;
  EXPECT_LT(s, 5.0) << "the silent peers held the control thread";

  // The partial line was not taken for a command.
  std::string reply;
  char buf[256];
  ssize_t n;
  while ((n = ::read(partial, buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(reply, "error: no complete request line within 1 s\n");
  ::close(silent);
  ::close(partial);
  EXPECT_EQ(server.finish(), 0) << server.err();
}

TEST_F(CtlTest, DumpInProfileMode) {
  TracedServer server(ctl_dir_, {"CALLSCOPE_MODE=profile"});
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string p = std::to_string(pid);
  EXPECT_EQ(server.command("work 10"), "done 10");
  RunResult dump = ctl(ctl_dir_, {p, "dump"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_EQ(dump.out, "ok dump 1\n");
  RunResult status = ctl(ctl_dir_, {p, "status"});
  EXPECT_TRUE(contains(status.out, "mode: profile\n")) << status.out;
  EXPECT_TRUE(contains(status.out, "dumps: 1\n")) << status.out;
  EXPECT_EQ(server.finish(), 0) << server.err();
}

// One numbering of snapshots (issue 30, item 6): the server started by a
// shell is the trace's second process, after the shell (whose final state
// is a snapshot too). The K that `ctl PID dump` answers picks that very
// snapshot in `report --dump K` -- told by what it holds: 8 workers x 1
// request, then x 3 -- and `info` lists it as K, with the server's pid.
TEST_F(CtlTest, SnapshotNumbersAreTheSameInCtlInfoAndReport) {
  TracedProgram traced({"/bin/sh", "-c", "\"$0\"; exit $?", server_fixture()}, ctl_dir_, {"CALLSCOPE_MODE=profile"});
  // The shell serves a socket too: the server's is the one of a process
  // named "server".
  pid_t pid = 0;
  for (int i = 0; i < 1000 && pid == 0; ++i) {
    if (DIR* d = ::opendir(ctl_dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const pid_t p = static_cast<pid_t>(std::atol(e->d_name));
        if (p > 0 && read_file("/proc/" + std::to_string(p) + "/comm") == "server\n") pid = p;
      }
      ::closedir(d);
    }
    if (pid == 0) ::usleep(10000);
  }
  ASSERT_GT(pid, 0) << traced.err();
  const std::string p = std::to_string(pid);
  EXPECT_EQ(traced.command("work 1"), "done 1");
  EXPECT_EQ(ctl(ctl_dir_, {p, "dump"}).out, "ok dump 1\n");
  EXPECT_EQ(traced.command("work 2"), "done 2");
  EXPECT_EQ(ctl(ctl_dir_, {p, "dump"}).out, "ok dump 2\n");
  EXPECT_EQ(traced.finish(), 0) << traced.err();

  for (const auto& [k, requests] : {std::pair{1, 8u}, std::pair{2, 24u}}) {
    auto rows = flat_report(traced.trace(), {"--dump", std::to_string(k)});
    EXPECT_EQ(num(rows["handle_request"], "calls"), requests) << "snapshot " << k;
  }
  RunResult info = callscope({"info", traced.trace()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  std::istringstream lines(info.out.substr(info.out.find("snapshots (report --dump K):")));
  std::map<int, std::string> taken;  // K -> "PID  TAKEN BY" (the columns' last two spaces apart)
  for (std::string line; std::getline(lines, line) && !line.empty();) {
    std::istringstream fields(line);
    int k = 0;
    std::string pid_text;
    if (fields >> k >> pid_text) taken[k] = pid_text + line.substr(line.rfind("  "));
  }
  EXPECT_EQ(taken[1], p + "  callscope ctl dump") << info.out;
  EXPECT_EQ(taken[2], p + "  callscope ctl dump") << info.out;
  EXPECT_EQ(taken.size(), 4u) << info.out;  // and the two processes' final states
}

TEST_F(CtlTest, IntervalDumpsRunWithoutASocket) {
  // The control thread also writes the CALLSCOPE_INTERVAL snapshots, so it
  // runs when the socket is disabled.
  ASSERT_EQ(::mkdir(ctl_dir_.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(ctl_dir_.c_str(), 0750), 0);
  TracedServer server(ctl_dir_, {"CALLSCOPE_MODE=profile", "CALLSCOPE_INTERVAL=50ms"});
  EXPECT_EQ(server.command("work 10"), "done 10");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const std::string answer = server.command("dump");  // "dump K": K-1 snapshots were written before
  ASSERT_EQ(answer.rfind("dump ", 0), 0u) << answer;
  EXPECT_GE(std::atoi(answer.c_str() + 5), 5) << answer;
  EXPECT_EQ(server.finish(), 0) << server.err();
  EXPECT_TRUE(contains(server.err(), "callscope: control socket disabled: " + ctl_dir_ + " is open to other users"))
      << server.err();
}

// ---- errors ----------------------------------------------------------------

TEST_F(CtlTest, NoSuchProcess) {
  const std::string p = std::to_string(dead_pid());
  RunResult r = ctl(ctl_dir_, {p, "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "callscope ctl: no process " + p + "\n");
}

TEST_F(CtlTest, ProcessNotTraced) {
  ASSERT_EQ(::mkdir(ctl_dir_.c_str(), 0700), 0);
  const std::string p = std::to_string(::getpid());
  RunResult r = ctl(ctl_dir_, {p, "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "callscope ctl: process " + p + " is not traced by callscope (no control socket at " +
                                  ctl_dir_ + "/" + p + ".sock"))
      << r.err;
}

TEST_F(CtlTest, StaleSocketOfADeadProcessIsRemoved) {
  ASSERT_EQ(::mkdir(ctl_dir_.c_str(), 0700), 0);
  const std::string p = std::to_string(dead_pid());
  const std::string sock = ctl_dir_ + "/" + p + ".sock";
  ::close(make_socket(sock, false));
  RunResult r = ctl(ctl_dir_, {p, "dump"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "callscope ctl: no process " + p + " (it is gone; removing stale socket " + sock + ")\n");
  EXPECT_EQ(::access(sock.c_str(), F_OK), -1);
}

TEST_F(CtlTest, StaleSocketOfALiveProcess) {
  // Our own pid: alive, but nobody listens on the socket named after it.
  ASSERT_EQ(::mkdir(ctl_dir_.c_str(), 0700), 0);
  const std::string p = std::to_string(::getpid());
  const std::string sock = ctl_dir_ + "/" + p + ".sock";
  const int fd = make_socket(sock, false);
  RunResult r = ctl(ctl_dir_, {p, "status"});
  ::close(fd);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "callscope ctl: process " + p + " does not listen on " + sock)) << r.err;
}

TEST_F(CtlTest, SocketServedByAnotherProcessIsNotTrusted) {
  // A socket named after a sleeping child, but served by us.
  ASSERT_EQ(::mkdir(ctl_dir_.c_str(), 0700), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string p = std::to_string(child);
  const std::string sock = ctl_dir_ + "/" + p + ".sock";
  const int fd = make_socket(sock, true);
  RunResult r = ctl(ctl_dir_, {p, "stop"});
  ::close(fd);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "callscope ctl: refusing to talk to " + sock + ": it is served by process " +
                       std::to_string(::getpid()) + ", not by process " + p + "\n");
}

TEST_F(CtlTest, BadArguments) {
  for (const char* pid : {"abc", "0", "12x", "99999999999"}) {
    RunResult r = ctl(ctl_dir_, {pid, "status"});
    EXPECT_EQ(r.exit_code, 2) << pid;
    EXPECT_TRUE(contains(r.err, std::string("'") + pid + "' is not a process id (a positive integer)")) << r.err;
  }
  RunResult unknown = ctl(ctl_dir_, {"1", "frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(contains(unknown.err, "unknown command 'frobnicate' (valid: start, stop, clear, dump, status)"))
      << unknown.err;
  RunResult missing = ctl(ctl_dir_, {"1"});
  EXPECT_EQ(missing.exit_code, 2);
  RunResult timeout = ctl(ctl_dir_, {"--timeout", "0", "1", "status"});
  EXPECT_EQ(timeout.exit_code, 2);
  RunResult help = ctl(ctl_dir_, {"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* word : {"start", "stop", "clear", "dump", "status", "CALLSCOPE_CTL_DIR", "/tmp/callscope-UID",
                           "--timeout"})
    EXPECT_TRUE(contains(help.out, word)) << word;
}

// The scenario: a server with 8 worker threads, profiled in process,
// started, stopped, dumped and cleared from outside at chosen points; the
// snapshots hold exactly the requests made while profiling was on.
TEST_F(CtlTest, StartStopDumpClearFromOutsideGiveExactCounts) {
  TracedServer server(ctl_dir_, {"CALLSCOPE_MODE=profile", "CALLSCOPE_START_OFF=1"});
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string p = std::to_string(pid);
  auto control = [&](const std::string& command, const std::string& expected) {
    RunResult r = ctl(ctl_dir_, {p, command});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_EQ(r.out, expected) << command;
  };
  EXPECT_EQ(server.command("work 3000"), "done 3000");  // off: not counted
  control("start", "ok\n");
  EXPECT_EQ(server.command("work 20000"), "done 20000");
  control("dump", "ok dump 1\n");
  control("stop", "ok\n");
  EXPECT_EQ(server.command("work 5000"), "done 5000");  // off again
  control("start", "ok\n");
  EXPECT_EQ(server.command("work 2000"), "done 2000");
  control("dump", "ok dump 2\n");
  RunResult status = ctl(ctl_dir_, {p, "status"});
  EXPECT_TRUE(contains(status.out, "mode: profile")) << status.out;
  EXPECT_TRUE(contains(status.out, "profiling: on")) << status.out;
  EXPECT_TRUE(contains(status.out, "threads: 9")) << status.out;
  EXPECT_TRUE(contains(status.out, "dumps: 2")) << status.out;
  control("clear", "ok\n");
  EXPECT_EQ(server.command("work 700"), "done 700");
  EXPECT_EQ(server.finish(), 0) << server.err();

  auto calls = [&](const std::vector<std::string>& args) { return flat_report(server.trace(), args); };
  auto d1 = calls({"--dump", "1"});
  EXPECT_EQ(num(d1["handle_request"], "calls"), 8u * 20000);
  EXPECT_EQ(num(d1["checksum"], "calls"), 8u * 4 * 20000);
  auto d2 = calls({"--dump", "2"});
  EXPECT_EQ(num(d2["handle_request"], "calls"), 8u * 22000);
  EXPECT_EQ(num(d2["parse_request"], "calls"), 8u * 22000);
  auto last = calls({});
  EXPECT_EQ(num(last["handle_request"], "calls"), 8u * 700);
  EXPECT_EQ(num(last["compute"], "calls"), 8u * 700);
  RunResult info = callscope({"info", server.trace()});
  EXPECT_TRUE(contains(info.out, "callscope ctl dump")) << info.out;
}

}  // namespace
}  // namespace callscope::e2e
