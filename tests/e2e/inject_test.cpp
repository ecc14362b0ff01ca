// Working inside a running process from outside (src/inject): a thread of
// a program started without callscope is borrowed at a system call, makes
// system calls and a call of a libc function there, and is given back; the
// program then runs on and ends as it would have.

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "e2e_support.h"
#include "inject/attachable.h"
#include "inject/load.h"
#include "inject/remote.h"

namespace callscope::e2e {
namespace {

// inject_target, started with its stdout on a pipe; ready once it said so.
class Target {
 public:
  explicit Target(const std::string& program = "inject_target") {
    int out[2];
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      const std::string path = std::string(FIXTURE_DIR) + "/" + program;
      ::execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    out_ = out[0];
    EXPECT_NE(read_some().find("ready=1"), std::string::npos);
  }
  ~Target() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }
  pid_t pid() const { return pid_; }
  std::string read_some() {
    char buf[256];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
  // SIGTERM, then what it printed and how it ended.
  std::string finish(int* status) {
    ::kill(pid_, SIGTERM);
    std::string text;
    for (std::string s; !(s = read_some()).empty();) text += s;
    ::waitpid(pid_, status, 0);
    pid_ = -1;
    return text;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
};

TEST(Inject, FindsLibcExportsInAnotherProcess) {
  Target target;
  std::string error;
  auto maps = inject::read_maps(target.pid(), &error);
  ASSERT_TRUE(maps) << error;
  const uint64_t dlopen_there = inject::remote_symbol(*maps, inject::is_libc, "dlopen", &error);
  EXPECT_NE(dlopen_there, 0u) << error;
  // Within one of libc's executable mappings.
  bool inside = false;
  for (const inject::Mapping& m : *maps)
    if (m.perms.find('x') != std::string::npos && dlopen_there >= m.start && dlopen_there < m.end &&
        m.path.find("libc") != std::string::npos)
      inside = true;
  EXPECT_TRUE(inside);
  EXPECT_EQ(inject::remote_symbol(*maps, inject::is_libc, "no_such_function_here", &error), 0u);
  EXPECT_NE(error.find("exports no function no_such_function_here"), std::string::npos) << error;
  EXPECT_EQ(inject::remote_symbol(*maps, [](std::string_view n) { return n == "libnothing.so"; }, "f", &error), 0u);
  EXPECT_NE(error.find("no such library"), std::string::npos) << error;
}

TEST(Inject, BorrowedThreadMakesCallsThereAndTheProgramRunsOn) {
  Target target;
  std::string error;
  auto thread = inject::BorrowedThread::take(target.pid(), target.pid(), 2000, &error);
  ASSERT_TRUE(thread) << error;
  // A system call made there: its pid.
  EXPECT_EQ(thread->syscall(SYS_getpid, {}), target.pid());
  // Memory of ours in it: a page for data, one for code.
  const auto page = thread->syscall(SYS_mmap, {0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                               static_cast<uint64_t>(-1), 0});
  ASSERT_TRUE(page);
  ASSERT_GT(*page, 0);
  const uint64_t data = static_cast<uint64_t>(*page), code = data + 4096;
  const char text[] = "1729 callscope was here";
  ASSERT_TRUE(inject::write_remote(target.pid(), data, text, sizeof text));
  ASSERT_TRUE(inject::write_remote(target.pid(), code, inject::kReturnStub, sizeof inject::kReturnStub));
  EXPECT_EQ(thread->syscall(SYS_mprotect, {code, 4096, PROT_READ | PROT_EXEC}), 0);
  // A function of its libc called there: atoi of our text.
  auto maps = inject::read_maps(target.pid(), &error);
  ASSERT_TRUE(maps) << error;
  const uint64_t atoi_there = inject::remote_symbol(*maps, inject::is_libc, "atoi", &error);
  ASSERT_NE(atoi_there, 0u) << error;
  auto value = thread->call(atoi_there, {data}, code, &error);
  ASSERT_TRUE(value) << error;
  EXPECT_EQ(static_cast<int>(*value), 1729);
  // And a system call after a call.
  EXPECT_EQ(thread->syscall(SYS_munmap, {data, 8192}), 0);
  ASSERT_TRUE(thread->give_back(&error)) << error;
  // The program goes on: its sleeps (the system call held back was made)
  // and its other thread.
  ::usleep(50000);
  int status = 0;
  const std::string out = target.finish(&status);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("spins_moved=1"), std::string::npos) << out;
  const size_t at = out.find("ticks=");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_GT(std::stoul(out.substr(at + 6)), 10u) << out;
}

TEST(Inject, AThreadThatMakesNoSystemCallIsLetGoAfterTheTimeout) {
  Target target;
  // The spinner: the second thread of the program.
  std::string error;
  pid_t spinner = 0;
  const std::string task = "/proc/" + std::to_string(target.pid()) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(task))
    if (std::stoi(entry.path().filename().string()) != target.pid()) spinner = std::stoi(entry.path().filename().string());
  ASSERT_NE(spinner, 0);
  auto thread = inject::BorrowedThread::take(target.pid(), spinner, 100, &error);
  EXPECT_FALSE(thread);
  EXPECT_NE(error.find("made no system call within 100 ms"), std::string::npos) << error;
  int status = 0;
  const std::string out = target.finish(&status);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("spins_moved=1"), std::string::npos) << out;
}

TEST(Inject, LoadsALibraryFromAThreadOfItsOwnAndTheProgramRunsOn) {
  Target target;
  TempDir dir;
  const std::string marker = dir.file("marker");
  inject::LoadRequest request;
  request.library = std::string(FIXTURE_DIR) + "/inject_probe.so";
  request.entry = "probe_entry";
  request.arg = marker;
  const inject::LoadResult r = inject::load_library(target.pid(), request);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.entry_result, 42);
  // Its constructor ran before the entry, in the program.
  EXPECT_EQ(read_file(marker), "pid=" + std::to_string(target.pid()) + " value=7\n");
  EXPECT_GT(r.stopped_ms, 0.0);
  std::printf("a thread of the program was held %.2f ms\n", r.stopped_ms);
  EXPECT_NE(read_file("/proc/" + std::to_string(target.pid()) + "/maps").find("inject_probe.so"), std::string::npos);
  ::usleep(20000);
  int status = 0;
  const std::string out = target.finish(&status);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("spins_moved=1"), std::string::npos) << out;
}

TEST(Inject, ALibraryThatCannotBeLoadedIsNamedAndTheProgramRunsOn) {
  Target target;
  inject::LoadRequest request;
  request.library = "/nonexistent/libnothing.so";
  inject::LoadResult r = inject::load_library(target.pid(), request);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("dlopen in the process failed"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("libnothing.so"), std::string::npos) << r.error;
  request.library = std::string(FIXTURE_DIR) + "/inject_probe.so";
  request.entry = "no_such_entry";
  r = inject::load_library(target.pid(), request);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("has no function no_such_entry"), std::string::npos) << r.error;
  int status = 0;
  const std::string out = target.finish(&status);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
}

// The facts of real processes, and what attach says of them (each refusal's
// words: tests/unit/inject/attachable_test.cpp).
TEST(Inject, RefusalsOfRealProcesses) {
  {
    Target target;
    EXPECT_FALSE(inject::refusal(inject::gather_facts(target.pid())));
    // Held by us: traced.
    std::string error;
    auto thread = inject::BorrowedThread::take(target.pid(), target.pid(), 2000, &error);
    ASSERT_TRUE(thread) << error;
    auto why = inject::refusal(inject::gather_facts(target.pid()));
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("already traced by process " + std::to_string(::getpid())), std::string::npos) << *why;
    ASSERT_TRUE(thread->give_back(&error)) << error;
    EXPECT_FALSE(inject::refusal(inject::gather_facts(target.pid())));
    // Stopped.
    ::kill(target.pid(), SIGSTOP);
    ::usleep(20000);
    why = inject::refusal(inject::gather_facts(target.pid()));
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("is stopped"), std::string::npos) << *why;
    ::kill(target.pid(), SIGCONT);
  }
  {
    Target target("inject_target_static");
    auto why = inject::refusal(inject::gather_facts(target.pid()));
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("statically linked"), std::string::npos) << *why;
  }
  auto why = inject::refusal(inject::gather_facts(999999999));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("no process 999999999"), std::string::npos) << *why;
}

TEST(Inject, ANonexistentProcessIsNamed) {
  std::string error;
  EXPECT_FALSE(inject::read_maps(999999999, &error));
  EXPECT_NE(error.find("/proc/999999999/maps"), std::string::npos) << error;
  EXPECT_FALSE(inject::BorrowedThread::take(999999999, 999999999, 100, &error));
  EXPECT_NE(error.find("ptrace"), std::string::npos) << error;
}

}  // namespace
}  // namespace callscope::e2e
