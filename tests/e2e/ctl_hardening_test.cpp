// Another local user must not steer the files of a traced program (issue 10,
// items 7, 8, 10 and 13):
//  - the control directory is checked along its whole path, and the socket
//    is made and removed relative to the directory's descriptor: a swapped
//    component never redirects the removal at exit;
//  - without `record`, a callscope-<pid>.raw planted by someone else (a
//    symbolic link, another user's directory, one open to others) is never
//    written to;
//  - a /tmp/callscope-UID made first by another user moves the socket to
//    $XDG_RUNTIME_DIR/callscope, and the program says so; ctl finds it;
//  - `ctl status` in record mode says "recording", and ctl given the pid of
//    `callscope record` acts on the program it traces and says so;
//  - (issue 30, item 5) a program that changes its user (root to nobody) is
//    controlled by root and by its new user, and refuses a second runtime.
//
// "Another user" is played by uid 65534 where we run as root (chown), and
// otherwise by a directory open to everyone without a sticky bit, which is
// as bad: anyone may then replace what it holds.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

constexpr uid_t kNobody = 65534;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

class CtlHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (variants().empty()) GTEST_SKIP() << "no fixture variants";
  }
  static std::string fx(const std::string& name) { return fixture(variants().front(), name); }
  // `record` of the recursion fixture with CALLSCOPE_CTL_DIR=ctl_dir.
  RunResult record_with_ctl_dir(const std::string& ctl_dir) {
    return run({"env", "CALLSCOPE_CTL_DIR=" + ctl_dir, CALLSCOPE_EXE, "record", "--force", "-o",
                base_.file("x.trace"), "--", fx("recursion"), "10"});
  }
  TempDir base_;
};

// ---- item 7: the whole path of the control directory ----------------------

TEST_F(CtlHardeningTest, ParentWritableByOthersDisablesTheSocket) {
  const std::string att = base_.file("att");
  ASSERT_EQ(::mkdir(att.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(att.c_str(), 0777), 0);
  const std::string ctl_dir = att + "/ctl";
  RunResult r = record_with_ctl_dir(ctl_dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "callscope: control socket disabled: " + ctl_dir + ": " + att +
                                  " is writable by other users (mode 0777, not sticky), so another user could "
                                  "replace what it holds; use a directory whose every parent belongs to root or "
                                  "to you and is not writable by others"))
      << r.err;
  EXPECT_EQ(summarize(base_.file("x.trace")).calls_of("recurse"), 11u);
  EXPECT_NE(::access(ctl_dir.c_str(), F_OK), 0) << "the runtime made a directory under an unsafe parent";
}

TEST_F(CtlHardeningTest, ParentOwnedByAnotherUserDisablesTheSocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  // The issue's setup: /tmp/att is another user's, ctl in it is ours (0700).
  const std::string att = base_.file("att");
  const std::string ctl_dir = att + "/ctl";
  ASSERT_EQ(::mkdir(att.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(ctl_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(att.c_str(), kNobody, kNobody), 0);
  RunResult r = record_with_ctl_dir(ctl_dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "callscope: control socket disabled: " + ctl_dir + ": " + att +
                                  " is owned by uid 65534, not by root or by us (uid 0)"))
      << r.err;
  EXPECT_TRUE(entries(ctl_dir).empty());
}

// The attack itself: once the socket is made, `ctl` is swapped for a link
// to a directory holding a file named like the socket. At exit the program
// must remove its own socket (in the directory it checked), not that file.
TEST_F(CtlHardeningTest, SocketIsRemovedInTheDirectoryItWasMadeIn) {
  const std::string parent = base_.file("p");
  const std::string ctl_dir = parent + "/ctl";
  ASSERT_EQ(::mkdir(parent.c_str(), 0700), 0);
  TracedProgram server({fx("server")}, ctl_dir);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string name = std::to_string(pid) + ".sock";

  const std::string moved = parent + "/moved";
  const std::string victim = base_.file("victim");
  ASSERT_EQ(::rename(ctl_dir.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::mkdir(victim.c_str(), 0700), 0);
  std::ofstream(victim + "/" + name) << "precious\n";
  ASSERT_EQ(::symlink(victim.c_str(), ctl_dir.c_str()), 0);

  EXPECT_EQ(server.command("work 3"), "done 3");
  EXPECT_EQ(server.finish(), 0) << server.err();
  EXPECT_EQ(::access((victim + "/" + name).c_str(), F_OK), 0) << "the program removed a file through the link";
  EXPECT_TRUE(entries(moved).empty()) << "the program's own socket was left behind";
}

// A link on the way that we own is as safe as its directory: followed.
TEST_F(CtlHardeningTest, OurOwnLinkOnTheWayIsFollowed) {
  const std::string real = base_.file("real");
  ASSERT_EQ(::mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(real.c_str(), base_.file("link").c_str()), 0);
  const std::string ctl_dir = base_.file("link") + "/ctl";
  TracedProgram server({fx("server")}, ctl_dir);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  RunResult r = ctl(ctl_dir, {std::to_string(pid), "status"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, "pid: " + std::to_string(pid) + "\n")) << r.out;
  EXPECT_EQ(server.finish(), 0) << server.err();
  EXPECT_TRUE(entries(real + "/ctl").empty());
}

// ---- item 8: the runtime without record ------------------------------------

// Runs the recursion fixture with the runtime preloaded and no CALLSCOPE_DIR,
// in `cwd`; `plant` runs in the child first, with the child's pid (the pid
// the runtime will name its session after).
RunResult run_without_record(const std::string& cwd, const std::function<void(pid_t)>& plant) {
  return run({fixture(variants().front(), "recursion"), "10"}, "", [&] {
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    ::unsetenv("CALLSCOPE_DIR");
    ::unsetenv("CALLSCOPE_RECORDER_PID");
    ::setenv("CALLSCOPE_CTL_DIR", (cwd + "/ctl").c_str(), 1);
    ::setenv("LD_PRELOAD", plain_path(RUNTIME_PATH).c_str(), 1);
    plant(::getpid());
  });
}

struct PlantCase {
  const char* name;
  // Makes `path` (callscope-<pid>.raw), in the child, before the runtime starts.
  std::function<void(const std::string& path, const std::string& loot)> plant;
  const char* reason;  // what the runtime says of it
  bool needs_root;
};

TEST_F(CtlHardeningTest, PlantedSessionDirectoryIsNeverUsed) {
  const std::vector<PlantCase> cases = {
      {"symbolic link",
       [](const std::string& path, const std::string& loot) {
         if (::symlink(loot.c_str(), path.c_str()) != 0) ::_exit(121);
       },
       "it is a symbolic link", false},
      {"another user's directory",
       [](const std::string& path, const std::string&) {
         if (::mkdir(path.c_str(), 0700) != 0 || ::chown(path.c_str(), kNobody, kNobody) != 0) ::_exit(122);
       },
       "it is owned by uid 65534, not by us (uid 0)", true},
      {"directory open to others",
       [](const std::string& path, const std::string&) {
         if (::mkdir(path.c_str(), 0700) != 0 || ::chmod(path.c_str(), 0777) != 0) ::_exit(123);
       },
       "it is open to other users (mode 0777; it must be 0700)", false},
  };
  for (const PlantCase& c : cases) {
    SCOPED_TRACE(c.name);
    if (c.needs_root && ::geteuid() != 0) continue;
    TempDir dir;
    const std::string loot = dir.file("loot");  // "their" directory
    ASSERT_EQ(::mkdir(loot.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(loot.c_str(), 0777), 0);
    RunResult r = run_without_record(dir.path(), [&](pid_t pid) {
      c.plant(dir.file("callscope-" + std::to_string(pid) + ".raw"), loot);
    });
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // The planted name, and the one the runtime made instead.
    std::string planted, made;
    for (const std::string& e : entries(dir.path())) {
      if (e.rfind("callscope-", 0) != 0) continue;
      (e.find(".1.raw") != std::string::npos ? made : planted) = e;
    }
    ASSERT_FALSE(planted.empty());
    ASSERT_EQ(made, planted.substr(0, planted.size() - 4) + ".1.raw") << r.err;
    EXPECT_TRUE(contains(r.err, "callscope: not using " + dir.file(planted) + ": " + c.reason + "; writing to " +
                                    dir.file(made) + " instead\n"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "callscope: events written to " + dir.file(made) + "; run 'callscope finish " +
                                    dir.file(made) + "'"))
        << r.err;
    EXPECT_TRUE(entries(loot).empty()) << "the runtime wrote into the planted directory";
    EXPECT_TRUE(entries(dir.file(planted)).empty()) << "the runtime wrote into the planted directory";
    struct stat st;
    ASSERT_EQ(::lstat(dir.file(made).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid());
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    RunResult fin = callscope({"finish", dir.file(made), "-o", dir.file("x.trace")});
    EXPECT_EQ(fin.exit_code, 0) << fin.err;
    EXPECT_EQ(summarize(dir.file("x.trace")).calls_of("recurse"), 11u);
  }
}

// An exec'd image keeps its pid: it finds the session its earlier image made
// (ours, 0700) and goes on in it, as before. (CALLSCOPE_FOLLOW=all: the
// shell, which has no hooks, makes its session too.)
TEST_F(CtlHardeningTest, ExecKeepsItsSessionWithoutRecord) {
  RunResult r = run({"/bin/sh", "-c", "exec '" + fx("recursion") + "' 10"}, "", [&] {
    if (::chdir(base_.path().c_str()) != 0) ::_exit(120);
    ::unsetenv("CALLSCOPE_DIR");
    ::setenv("CALLSCOPE_CTL_DIR", base_.file("ctl").c_str(), 1);
    ::setenv("CALLSCOPE_FOLLOW", "all", 1);
    ::setenv("LD_PRELOAD", plain_path(RUNTIME_PATH).c_str(), 1);
  });
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> sessions;
  for (const std::string& e : entries(base_.path()))
    if (e.rfind("callscope-", 0) == 0) sessions.push_back(e);
  ASSERT_EQ(sessions.size(), 1u) << r.err;
  EXPECT_FALSE(contains(r.err, "not using")) << r.err;
  EXPECT_EQ(entries(base_.file(sessions[0])).size(), 2u) << "one process directory per image";
}

// The CALLSCOPE_DIR that record gives the program passes the same checks.
TEST_F(CtlHardeningTest, GivenSessionDirectoryThatIsALinkIsRefused) {
  const std::string loot = base_.file("loot");
  ASSERT_EQ(::mkdir(loot.c_str(), 0700), 0);
  const std::string link = base_.file("session");
  ASSERT_EQ(::symlink(loot.c_str(), link.c_str()), 0);
  RunResult r = run({"env", "CALLSCOPE_DIR=" + link, "CALLSCOPE_CTL_DIR=" + base_.file("ctl"),
                     "LD_PRELOAD=" + plain_path(RUNTIME_PATH), fx("recursion"), "10"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "callscope: not recording: CALLSCOPE_DIR " + link + ": it is a symbolic link\n"))
      << r.err;
  EXPECT_TRUE(entries(loot).empty());
}

// ctl removes a stale socket only in a safe directory, and warns when it
// talks through one that is not safe any more.
TEST_F(CtlHardeningTest, CtlActsOnlyInSafeDirectories) {
  const std::string ctl_dir = base_.file("ctl");
  TracedProgram server({fx("server")}, ctl_dir);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  ASSERT_EQ(::chmod(ctl_dir.c_str(), 0755), 0);  // opened up after the socket was made
  RunResult r = ctl(ctl_dir, {std::to_string(pid), "status"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "callscope ctl: warning: " + ctl_dir + " is open to other users (mode 0755; it must be 0700)\n");
  EXPECT_TRUE(contains(r.out, "pid: " + std::to_string(pid) + "\n")) << r.out;
  EXPECT_EQ(server.finish(), 0) << server.err();

  // A socket of a process that is gone, in a directory not safe: left alone.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string sock = ctl_dir + "/" + std::to_string(gone) + ".sock";
  std::ofstream(sock) << "";
  RunResult stale = ctl(ctl_dir, {std::to_string(gone), "status"});
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_EQ(stale.err, "callscope ctl: no process " + std::to_string(gone) + " (it is gone, and left " + sock +
                           ", which we do not remove: " + ctl_dir +
                           " is open to other users (mode 0755; it must be 0700))\n");
  EXPECT_EQ(::access(sock.c_str(), F_OK), 0);
}

// ---- item 10: /tmp/callscope-UID made first by another user ----------------

// Runs in a mount namespace of its own with a fresh /tmp, so the real
// /tmp/callscope-UID of whoever runs the tests is never touched (and the
// build tree stays reachable, wherever it is: private_tmp_shell).
TEST_F(CtlHardeningTest, TakenTmpDirectoryFallsBackToXdgRuntimeDir) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a private /tmp needs a mount namespace (private_tmp_shell)";
  const std::string script = R"SH(
    uid=$(id -u)
    mkdir -m 0700 /tmp/callscope-$uid
    chown 65534:65534 /tmp/callscope-$uid
    mkdir -m 0700 /tmp/xdg
    export XDG_RUNTIME_DIR=/tmp/xdg
    unset CALLSCOPE_CTL_DIR
    mkfifo /tmp/in
    "$EXE" record -o /tmp/x.trace -- "$SERVER" < /tmp/in > /tmp/out 2> /tmp/err &
    exec 3> /tmp/in
    i=0
    while [ -z "$(ls /tmp/xdg/callscope 2>/dev/null)" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
    pid=$(ls /tmp/xdg/callscope | sed 's/[.]sock$//')
    "$EXE" ctl "$pid" status > /tmp/ctl.out 2> /tmp/ctl.err
    echo "ctl exit $?"
    exec 3>&-
    wait $!
    echo "record exit $?"
    echo "== ctl.out"; cat /tmp/ctl.out
    echo "== ctl.err"; cat /tmp/ctl.err
    echo "== err"; cat /tmp/err
    echo "== left"; ls -A /tmp/callscope-$uid /tmp/xdg/callscope
  )SH";
  RunResult r = run(private_tmp_shell(script, {std::string("EXE=") + CALLSCOPE_EXE, "SERVER=" + fx("server")}));
  if (contains(r.out, "SKIP") || (r.out.empty() && contains(r.err, "unshare")))
    GTEST_SKIP() << "no private mount namespace here: " << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "ctl exit 0\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "record exit 0\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "recording: on\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "callscope: control socket in /tmp/xdg/callscope instead: /tmp/callscope-")) << r.out;
  EXPECT_TRUE(contains(r.out, " is owned by uid 65534, not by us (uid 0)")) << r.out;
  EXPECT_TRUE(contains(r.out, "== left\n/tmp/callscope-")) << r.out;
  EXPECT_FALSE(contains(r.out, ".sock")) << "a socket left behind: " << r.out;
}

// ---- issue 30, item 5: a program that changes its user -------------------

// A server's worker started as root becomes nobody (nginx's default): root
// still controls it through the socket made at its start (in
// /tmp/callscope-0), nobody through the one it makes in
// /tmp/callscope-65534 once it is nobody; a dump works for both (its files
// were opened while it was root); attach refuses a second runtime, as
// either, saying why; and the sockets go at the end. And root's ctl finds
// a program started as nobody, in nobody's directory. In a private /tmp, as
// the directories are the default ones.
TEST_F(CtlHardeningTest, AProgramThatBecameNobodyIsServedToRootAndToNobody) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the program becomes uid 65534";
  if (run({"sh", "-c", "command -v setpriv"}).exit_code != 0) GTEST_SKIP() << "setpriv(1) is not installed";
  const std::string script = R"SH(
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    wait_for() { i=0; until eval "$1" || [ $i -ge 3000 ]; do sleep 0.01; i=$((i+1)); done; }
    # A copy nobody may run wherever the build tree is (a home 0700).
    mkdir -m 0755 /tmp/bin && cp "$EXE" /tmp/bin/callscope && chmod 0755 /tmp/bin/callscope
    mkfifo /tmp/in
    "$EXE" record --mode profile -o /tmp/x.trace -- "$SERVER" < /tmp/in > /tmp/out 2> /tmp/err &
    rec=$!
    exec 3> /tmp/in
    wait_for '[ -n "$(ls /tmp/callscope-0 2>/dev/null)" ]'
    pid=$(ls /tmp/callscope-0 | sed 's/[.]sock$//')
    echo "work 2" >&3
    echo "setuid 65534" >&3
    wait_for 'grep -q "^uid 65534$" /tmp/out'
    wait_for '[ -S /tmp/callscope-65534/$pid.sock ]'
    echo "== program"; cat /tmp/out; grep '^Uid:' /proc/$pid/status
    echo "== root dump"; "$EXE" ctl "$pid" dump; echo "exit $?"
    echo "== nobody dump"; as_nobody /tmp/bin/callscope ctl "$pid" dump; echo "exit $?"
    echo "== nobody status"; as_nobody /tmp/bin/callscope ctl "$pid" status; echo "exit $?"
    echo "== nobody attach"; as_nobody /tmp/bin/callscope attach "$pid" -o /tmp/a.trace 2>&1; echo "exit $?"
    echo "== root attach"; "$EXE" attach "$pid" -o /tmp/b.trace 2>&1; echo "exit $?"
    exec 3>&-
    wait $rec
    echo "== record exit $?"
    echo "== err"; cat /tmp/err
    echo "== left"; ls -A /tmp/callscope-0 /tmp/callscope-65534
    # A program started as nobody (the runtime preloaded, no record): root's
    # ctl finds its socket in nobody's directory.
    cp "$SERVER" "$RUNTIME" "$STUB" /tmp/bin/ && chmod 0755 /tmp/bin/*
    mkdir -m 0777 /tmp/nobody && mkfifo -m 0666 /tmp/in2
    (cd /tmp/nobody && as_nobody env LD_PRELOAD=/tmp/bin/$(basename "$RUNTIME") LD_LIBRARY_PATH=/tmp/bin \
       /tmp/bin/$(basename "$SERVER") < /tmp/in2 > /tmp/out2 2>&1) &
    exec 4> /tmp/in2
    wait_for '[ -n "$(ls /tmp/callscope-65534 2>/dev/null)" ]'
    pid2=$(ls /tmp/callscope-65534 | sed 's/[.]sock$//')
    echo "== root ctl of nobody's"; "$EXE" ctl "$pid2" status | grep "^pid: $pid2$"; echo "exit $?"
    exec 4>&-
    wait
    echo "== info"; "$EXE" info /tmp/x.trace
    echo "== report"; "$EXE" report /tmp/x.trace --dump 2 --format csv
  )SH";
  const std::string stub = std::string(RUNTIME_PATH).substr(0, std::string(RUNTIME_PATH).rfind('/')) +
                           "/libcallscope-stub.so";
  RunResult r = run(private_tmp_shell(script, {std::string("EXE=") + CALLSCOPE_EXE, "SERVER=" + fx("server"),
                                               std::string("RUNTIME=") + RUNTIME_PATH, "STUB=" + stub}));
  if (contains(r.out, "SKIP")) GTEST_SKIP() << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The program did become nobody (its own word, and the kernel's).
  ASSERT_TRUE(contains(r.out, "== program\ndone 2\nuid 65534\nUid:\t65534\t65534\t65534\t65534\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "== root dump\nok dump 1\nexit 0\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "== nobody dump\nok dump 2\nexit 0\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "dumps: 2\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "is traced by callscope already, into a session of uid 0")) << r.out;
  EXPECT_TRUE(contains(r.out, "runs under callscope record already: 'callscope ctl ")) << r.out;
  EXPECT_FALSE(contains(r.out, "-finstrument-functions")) << r.out;
  EXPECT_EQ(count(r.out, "\nexit 1\n"), 2u) << r.out;  // both attaches refused
  EXPECT_TRUE(contains(r.out, "== record exit 0\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "== left\n/tmp/callscope-0:\n\n/tmp/callscope-65534:\n== root ctl")) << r.out;
  EXPECT_TRUE(contains(r.out, "== root ctl of nobody's\npid: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nexit 0\n== info")) << r.out;
  // The two snapshots, by the numbers ctl gave, and what the second holds:
  // 8 workers' 2 requests each.
  EXPECT_TRUE(contains(r.out, "callscope ctl dump")) << r.out;
  EXPECT_TRUE(contains(r.out, "handle_request")) << r.out;
  const auto rows = csv_by(r.out.substr(r.out.find("== report\n") + 10), "function");
  ASSERT_TRUE(rows.count("handle_request")) << r.out;
  EXPECT_EQ(num(rows.at("handle_request"), "calls"), 16u) << r.out;
}

// ---- item 13: what ctl says about record mode and record's own pid --------

TEST_F(CtlHardeningTest, StatusSaysRecordingInRecordMode) {
  const std::string ctl_dir = base_.file("ctl");
  TracedProgram server({fx("server")}, ctl_dir);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string p = std::to_string(pid);
  RunResult on = ctl(ctl_dir, {p, "status"});
  EXPECT_TRUE(contains(on.out, "mode: record\nrecording: on\n")) << on.out;
  EXPECT_FALSE(contains(on.out, "profiling")) << on.out;
  EXPECT_EQ(ctl(ctl_dir, {p, "stop"}).out, "ok\n");
  RunResult off = ctl(ctl_dir, {p, "status"});
  EXPECT_TRUE(contains(off.out, "recording: off\n")) << off.out;
  EXPECT_EQ(server.finish(), 0) << server.err();
}

TEST_F(CtlHardeningTest, RecordersPidReachesTheTracedProgram) {
  const std::string ctl_dir = base_.file("ctl");
  TracedProgram server({fx("server")}, ctl_dir);
  const pid_t pid = server.wait_for_socket();
  ASSERT_GT(pid, 0) << server.err();
  const std::string rec = std::to_string(server.record_pid());
  RunResult r = ctl(ctl_dir, {rec, "status"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "callscope ctl: process " + rec + " is `callscope record`; acting on the program it traces, process " +
                       std::to_string(pid) + "\n");
  EXPECT_TRUE(contains(r.out, "pid: " + std::to_string(pid) + "\n")) << r.out;
  RunResult stop = ctl(ctl_dir, {rec, "stop"});
  EXPECT_EQ(stop.out, "ok\n");
  EXPECT_TRUE(contains(ctl(ctl_dir, {std::to_string(pid), "status"}).out, "recording: off\n"));
  EXPECT_EQ(server.finish(), 0) << server.err();
}

TEST_F(CtlHardeningTest, RecorderTracingSeveralProcessesAsksForOne) {
  // Two servers, both children of record: the shell's background one is
  // left to record (a subreaper) when the subshell that started it ends,
  // and the shell becomes the other by exec.
  const std::string ctl_dir = base_.file("ctl");
  const std::string server_path = fx("server");
  TracedProgram both({"/bin/sh", "-c", "exec 3<&0; ('" + server_path + "' <&3 &); exec '" + server_path + "'"},
                     ctl_dir);
  // Wait for the two servers' sockets (the subshell's comes and goes): the
  // same two for 200 ms.
  std::vector<std::string> socks;
  for (int i = 0; i < 1000 && socks.empty(); ++i) {
    std::vector<std::string> a = entries(ctl_dir);
    if (a.size() == 2) {
      ::usleep(200000);
      std::vector<std::string> b = entries(ctl_dir);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a == b) socks = a;
    }
    ::usleep(10000);
  }
  ASSERT_EQ(socks.size(), 2u) << both.err();
  std::vector<int> pids;
  for (const std::string& s : socks) pids.push_back(std::atoi(s.c_str()));
  std::sort(pids.begin(), pids.end());
  const std::string rec = std::to_string(both.record_pid());
  RunResult r = ctl(ctl_dir, {rec, "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "callscope ctl: process " + rec + " is `callscope record`, tracing processes " +
                       std::to_string(pids[0]) + " and " + std::to_string(pids[1]) + ": give one of those pids\n");
  EXPECT_EQ(both.finish(), 0) << both.err();
}

TEST_F(CtlHardeningTest, HelpSaysWhereTheSocketIsAndWhichPid) {
  RunResult help = callscope({"ctl", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* words : {"$XDG_RUNTIME_DIR/callscope", "$HOME/.callscope-ctl", "the pid of `callscope record`",
                            "every parent of", "profiling (or recording) on/off"})
    EXPECT_TRUE(contains(help.out, words)) << words << "\n" << help.out;
}

TEST_F(CtlHardeningTest, RecorderWhoseProgramHasNoSocketSaysWhichPid) {
  // The program's socket is disabled (its directory is open to others).
  const std::string ctl_dir = base_.file("ctl");
  ASSERT_EQ(::mkdir(ctl_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(ctl_dir.c_str(), 0755), 0);
  TracedProgram server({fx("server")}, ctl_dir);
  EXPECT_EQ(server.command("work 1"), "done 1");  // it runs
  const std::string rec = std::to_string(server.record_pid());
  RunResult r = ctl(ctl_dir, {rec, "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "callscope ctl: process " + rec + " is `callscope record`; the program it traces (process "))
      << r.err;
  EXPECT_TRUE(contains(r.err, ") has no control socket: its socket is disabled (its stderr says why)")) << r.err;
  EXPECT_EQ(server.finish(), 0) << server.err();
}

}  // namespace
}  // namespace callscope::e2e
