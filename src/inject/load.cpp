#include "inject/load.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "inject/remote.h"

extern "C" const unsigned char callscope_inject_loader[];
extern "C" const unsigned char callscope_inject_loader_end[];

namespace callscope::inject {
namespace {

// The block the loader reads and writes (loader.S), at the start of the
// data page; strings after it.
struct LoaderData {
  uint64_t dlopen, dlsym, dlerror;  // 0, 8, 16
  uint64_t handle;                  // 24: out
  uint64_t entry_result;            // 32: out
  uint32_t state;                   // 40: out, written last (1 done, 2 dlopen failed, 3 no entry)
  uint32_t failure;                 // 44: the loader's own: the state to write after copying dlerror()
  uint64_t new_thread;              // 48: pthread_create's pthread_t
  uint64_t unused;                  // 56
  uint64_t path, entry, arg;        // 64, 72, 80: strings (entry 0: none)
  uint64_t thread_name;             // 88: string, 0: none
  uint64_t pthread_self, pthread_detach;  // 96, 104
};
static_assert(sizeof(LoaderData) == 112);
static_assert(offsetof(LoaderData, state) == 40 && offsetof(LoaderData, failure) == 44 &&
              offsetof(LoaderData, path) == 64 && offsetof(LoaderData, pthread_self) == 96);

constexpr uint64_t kPage = 4096;
constexpr uint64_t kErrorOffset = 2048;  // dlerror()'s text, copied by the loader
constexpr uint64_t kTrapOffset = 0, kLoaderOffset = 16;  // in the code page

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string read_error(pid_t pid, uint64_t data) {
  char text[kPage - kErrorOffset] = "";
  if (!read_remote(pid, data + kErrorOffset, text, sizeof text)) return "";
  text[sizeof text - 1] = '\0';
  return text;
}

// For the tests that make each step fail (tests/e2e/attach_test.cpp):
// CALLSCOPE_TEST_INJECT_FAIL names the step taken as failed -- hold, mmap,
// write, mprotect, thread, dlopen, entry -- after what the real failure
// would have left was done.
bool fails_here(const char* step) {
  const char* v = std::getenv("CALLSCOPE_TEST_INJECT_FAIL");
  return v && std::strcmp(v, step) == 0;
}

}  // namespace

LoadResult load_library(pid_t pid, const LoadRequest& request) {
  LoadResult result;
  const size_t loader_size = static_cast<size_t>(callscope_inject_loader_end - callscope_inject_loader);
  if (request.library.size() + request.entry.size() + request.arg.size() + request.thread_name.size() + 4 >
      kErrorOffset - sizeof(LoaderData)) {
    result.error = "the library's path, entry and argument are too long";
    return result;
  }
  auto maps = read_maps(pid, &result.error);
  if (!maps) return result;
  LoaderData d{};
  uint64_t pthread_create = 0;
  struct {
    const char* name;
    uint64_t* out;
  } wanted[] = {{"dlopen", &d.dlopen},
                {"dlsym", &d.dlsym},
                {"dlerror", &d.dlerror},
                {"pthread_create", &pthread_create},
                {"pthread_self", &d.pthread_self},
                {"pthread_detach", &d.pthread_detach}};
  for (auto& w : wanted) {
    std::string why;
    *w.out = remote_symbol(*maps, is_libc, w.name, &why);
    if (*w.out == 0) {
      result.error = "cannot find " + std::string(w.name) + " in the process's C library (" + why +
                     "): glibc 2.34 or later is needed, dynamically linked";
      return result;
    }
  }

  // A thread of the program, held at a system call for the time it takes
  // to start ours.
  std::optional<BorrowedThread> thread;
  std::string why;
  for (pid_t tid : threads_of(pid)) {
    if (fails_here("hold")) {
      why = "(a test's failure)";
      break;
    }
    auto taken = BorrowedThread::take(pid, tid, 1000, &why);
    if (taken) {
      thread.emplace(std::move(*taken));
      break;
    }
    if (why.rfind("ptrace:", 0) == 0 && tid == pid) break;  // not allowed: the others will not be either
  }
  if (!thread) {
    result.error = "cannot hold a thread of the process: " + why;
    // The checks before found nothing against it: what is left is a policy
    // that only the attempt meets.
    if (why.find("Operation not permitted") != std::string::npos)
      result.error += " (a seccomp filter, a container without CAP_SYS_PTRACE, or a security module such as "
                      "AppArmor or SELinux forbids ptrace here: attach from inside the container, or grant "
                      "CAP_SYS_PTRACE)";
    return result;
  }
  const auto t0 = std::chrono::steady_clock::now();
  result.borrowed = thread->tid();
  uint64_t mapped = 0;  // our pages in the process: unmapped again on failure
  auto fail = [&](const std::string& what) {
    result.error = what;
    if (mapped) thread->syscall(SYS_munmap, {mapped, 2 * kPage});
    thread->give_back(nullptr);
    result.stopped_ms = ms_since(t0);
    return result;
  };
  auto page = thread->syscall(SYS_mmap, {0, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                        static_cast<uint64_t>(-1), 0});
  if (page && *page > 0 && fails_here("mmap")) {
    thread->syscall(SYS_munmap, {static_cast<uint64_t>(*page), 2 * kPage});
    page = -ENOMEM;
  }
  if (!page || *page < 0 || static_cast<uint64_t>(*page) % kPage != 0)
    return fail("cannot map memory in the process: " + std::string(page ? std::strerror(static_cast<int>(-*page)) : "the thread is gone"));
  const uint64_t data = static_cast<uint64_t>(*page), code = data + kPage;
  mapped = data;
  // Strings after the block.
  std::vector<char> block(kPage, 0);
  uint64_t at = sizeof(LoaderData);
  auto put = [&](const std::string& s) {
    std::memcpy(block.data() + at, s.c_str(), s.size() + 1);
    const uint64_t addr = data + at;
    at += s.size() + 1;
    return addr;
  };
  d.path = put(fails_here("dlopen") ? "/nonexistent/callscope-test-failure.so" : request.library);
  d.entry = request.entry.empty() ? 0 : put(fails_here("entry") ? "callscope_test_no_such_entry" : request.entry);
  d.arg = put(request.arg);
  d.thread_name = request.thread_name.empty() ? 0 : put(request.thread_name.substr(0, 15));
  std::memcpy(block.data(), &d, sizeof d);
  std::vector<unsigned char> text(kPage, 0xcc);
  static_assert(sizeof kReturnStub <= kLoaderOffset - kTrapOffset);
  std::memcpy(text.data() + kTrapOffset, kReturnStub, sizeof kReturnStub);  // where pthread_create returns
  std::memcpy(text.data() + kLoaderOffset, callscope_inject_loader, loader_size);
  if (!write_remote(pid, data, block.data(), kPage) || !write_remote(pid, code, text.data(), kPage) ||
      (fails_here("write") && (errno = EFAULT)))
    return fail("cannot write to the process's memory: " + std::string(std::strerror(errno)));
  const auto prot = thread->syscall(SYS_mprotect, {code, kPage, PROT_READ | PROT_EXEC});
  if (!prot || *prot != 0 || fails_here("mprotect")) {
    const std::string reason = !prot       ? "the thread did not complete the system call"
                               : *prot < 0 ? std::strerror(static_cast<int>(-*prot))
                                           : "mprotect returned " + std::to_string(*prot);
    return fail("cannot make our code in the process executable (" + reason + "; a policy forbids it?)");
  }
  std::string call_error;
  // (The test's failure: pthread_create told to start nothing, as when it
  // cannot make a thread.)
  const auto created = fails_here("thread") ? std::optional<uint64_t>(EAGAIN)
                                            : thread->call(pthread_create,
                                                           {data + offsetof(LoaderData, new_thread), 0,
                                                            code + kLoaderOffset, data},
                                                           code + kTrapOffset, &call_error);
  if (!created) return fail("pthread_create in the process failed: " + call_error);
  if (static_cast<int>(*created) != 0)
    return fail("pthread_create in the process failed: " + std::string(std::strerror(static_cast<int>(*created))));
  if (!thread->give_back(&result.error)) return result;
  result.stopped_ms = ms_since(t0);

  // The new thread loads the library while the program runs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(request.timeout_ms);
  LoaderData out{};
  for (;;) {
    if (!read_remote(pid, data, &out, sizeof out)) {
      result.error = "the process ended while the library was loading";
      result.ended = true;
      return result;
    }
    if (out.state != 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      result.error = "the library did not finish loading within " + std::to_string(request.timeout_ms) + " ms";
      return result;
    }
    ::usleep(500);
  }
  if (out.state == 2) {
    result.error = "dlopen in the process failed: " + read_error(pid, data);
    return result;
  }
  if (out.state == 3) {
    result.error = "the library has no function " + request.entry + ": " + read_error(pid, data);
    return result;
  }
  result.entry_result = static_cast<int32_t>(out.entry_result);
  result.ok = true;
  return result;
}

}  // namespace callscope::inject
