#include "inject/remote.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "symbolize/elf_symbols.h"

namespace callscope::inject {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}


}  // namespace

uint64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> tids{pid};
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      if (tid > 0 && tid != pid) tids.push_back(tid);
    }
    ::closedir(d);
  }
  return tids;
}

bool wait_stop(pid_t tid, int* status, uint64_t deadline_ms) {
  for (;;) {
    const pid_t r = ::waitpid(tid, status, __WALL | (deadline_ms ? WNOHANG : 0));
    if (r == tid) return WIFSTOPPED(*status);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (now_ms() >= deadline_ms) return false;
    ::usleep(200);
  }
}

bool get_regs(pid_t tid, user_regs_struct* regs) { return ::ptrace(PTRACE_GETREGS, tid, nullptr, regs) == 0; }
bool set_regs(pid_t tid, const user_regs_struct& regs) {
  return ::ptrace(PTRACE_SETREGS, tid, nullptr, const_cast<user_regs_struct*>(&regs)) == 0;
}
bool is_event_stop(int status) { return WIFSTOPPED(status) && (status >> 16) != 0; }

namespace {

// The kind of a syscall stop: PTRACE_SYSCALL_INFO_ENTRY (with its number)
// or _EXIT.
int syscall_stop_kind(pid_t tid, int64_t* nr) {
  __ptrace_syscall_info info{};
  if (::ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof info, &info) <= 0) return -1;
  if (info.op == PTRACE_SYSCALL_INFO_ENTRY) *nr = static_cast<int64_t>(info.entry.nr);
  return info.op;
}

bool is_syscall_stop(int status) { return WIFSTOPPED(status) && WSTOPSIG(status) == (SIGTRAP | 0x80); }

// A system call the allocator makes while it holds its lock: a thread taken
// there would deadlock the first malloc it makes for us.
bool memory_syscall(int64_t nr) {
  return nr == SYS_mmap || nr == SYS_munmap || nr == SYS_mprotect || nr == SYS_brk || nr == SYS_mremap ||
         nr == SYS_madvise;
}

// Whether stopped thread `tid` blocks glibc's internal signals, SIGCANCEL
// (32) and SIGSETXID (33): only glibc itself does (a program's
// pthread_sigmask cannot: glibc leaves those two out), in its windows with
// every signal blocked -- pthread_create around its clone, a thread's last
// moments, posix_spawn. A thread taken there would start our loader with
// that mask for its own (attach would then find it blocking SIGTRAP), and
// may hold glibc's lock of thread stacks, which our pthread_create takes.
bool in_signals_window(pid_t tid) {
  uint64_t mask = 0;  // PTRACE_GETSIGMASK: the blocked mask, as the kernel has it
  if (::ptrace(PTRACE_GETSIGMASK, tid, sizeof mask, &mask) != 0) return false;
  constexpr uint64_t kInternal = (uint64_t{1} << (32 - 1)) | (uint64_t{1} << (33 - 1));
  return (mask & kInternal) != 0;
}

void set_args(user_regs_struct& regs, std::initializer_list<uint64_t> args, bool syscall) {
  unsigned long long* const call_regs[6] = {&regs.rdi, &regs.rsi, &regs.rdx, &regs.rcx, &regs.r8, &regs.r9};
  unsigned long long* const sys_regs[6] = {&regs.rdi, &regs.rsi, &regs.rdx, &regs.r10, &regs.r8, &regs.r9};
  size_t i = 0;
  for (uint64_t a : args) {
    if (i == 6) break;
    *(syscall ? sys_regs : call_regs)[i++] = a;
  }
}

}  // namespace

std::optional<std::vector<Mapping>> read_maps(pid_t pid, std::string* error) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  std::ifstream in(path);
  if (!in) {
    if (error) *error = "cannot read " + path + ": " + errno_text(errno);
    return std::nullopt;
  }
  std::vector<Mapping> maps;
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    unsigned long long start = 0, end = 0, offset = 0;
    char perms[8] = "";
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s%n", &start, &end, perms, &offset, &consumed) < 4)
      continue;
    m.start = start, m.end = end, m.offset = offset, m.perms = perms;
    size_t p = static_cast<size_t>(consumed);
    while (p < line.size() && line[p] == ' ') ++p;
    m.path = line.substr(p);
    maps.push_back(std::move(m));
  }
  return maps;
}

bool is_libc(std::string_view name) {
  return name == "libc.so.6" || (name.substr(0, 5) == "libc-" && name.size() > 8 && name.substr(name.size() - 3) == ".so");
}

uint64_t remote_symbol(const std::vector<Mapping>& maps, const std::function<bool(std::string_view)>& module_is,
                       const char* symbol, std::string* error) {
  const Mapping* first = nullptr;
  for (const Mapping& m : maps)
    if (!m.path.empty() && m.path[0] == '/' && module_is(base_name(m.path))) {
      first = &m;
      break;
    }
  if (!first) {
    if (error) *error = "no such library is loaded";
    return 0;
  }
  // A shared object maps its file at offsets equal to its addresses, less the
  // load bias.
  const uint64_t bias = first->start - first->offset;
  const int fd = ::open(first->path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = "cannot open " + first->path + ": " + errno_text(errno);
    return 0;
  }
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  uint64_t value = 0;
  if (elf) {
    symbolize::for_each_elf_symbol(elf, SHT_DYNSYM, [&](const GElf_Sym& sym, const char* name) {
      if (!name || std::strcmp(name, symbol) != 0 || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) return true;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC) return true;
      value = sym.st_value;
      return false;
    });
    elf_end(elf);
  }
  ::close(fd);
  if (value == 0) {
    if (error) *error = first->path + " exports no function " + symbol;
    return 0;
  }
  return bias + value;
}

bool read_remote(pid_t pid, uint64_t addr, void* out, size_t n) {
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

bool write_remote(pid_t pid, uint64_t addr, const void* in, size_t n) {
  iovec local{const_cast<void*>(in), n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return ::process_vm_writev(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

std::optional<BorrowedThread> BorrowedThread::take(pid_t pid, pid_t tid, int timeout_ms, std::string* error) {
  if (::ptrace(PTRACE_SEIZE, tid, nullptr, PTRACE_O_TRACESYSGOOD) != 0) {
    if (error) *error = "ptrace: " + errno_text(errno);
    return std::nullopt;
  }
  BorrowedThread t(pid, tid);
  auto let_go = [&](const std::string& why) {
    // Back to running, untouched: a thread stopped by us is interrupted
    // first (a running one cannot be detached).
    int status = 0;
    if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) == 0 && wait_stop(tid, &status, now_ms() + 1000)) {
      int sig = 0;
      if (!is_syscall_stop(status) && !is_event_stop(status)) sig = WSTOPSIG(status);
      ::ptrace(PTRACE_DETACH, tid, nullptr, sig);
    }
    if (error) *error = why;
    return std::nullopt;
  };
  const uint64_t deadline = now_ms() + static_cast<uint64_t>(timeout_ms);
  int sig = 0;
  int status = 0;
  // PTRACE_SYSCALL on a running thread fails: stop it first.
  if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 || !wait_stop(tid, &status))
    return let_go("cannot stop the thread: " + errno_text(errno));
  for (;;) {
    if (!is_syscall_stop(status) && !is_event_stop(status)) sig = WSTOPSIG(status);  // the program's signal
    int64_t nr = -1;
    if (is_syscall_stop(status) && syscall_stop_kind(tid, &nr) == PTRACE_SYSCALL_INFO_ENTRY && !memory_syscall(nr) &&
        !in_signals_window(tid))
      break;
    if (::ptrace(PTRACE_SYSCALL, tid, nullptr, sig) != 0) return let_go("ptrace: " + errno_text(errno));
    sig = 0;
    if (!wait_stop(tid, &status, deadline)) {
      if (now_ms() >= deadline)
        return let_go("the thread made no system call within " + std::to_string(timeout_ms) + " ms");
      if (error) *error = "the thread ended";
      return std::nullopt;
    }
  }
  if (!get_regs(tid, &t.saved_)) return let_go("cannot read the thread's registers: " + errno_text(errno));
  // Hold the call back: no system call (-1), on to its exit stop.
  user_regs_struct regs = t.saved_;
  regs.orig_rax = static_cast<unsigned long long>(-1);
  if (!set_regs(tid, regs) || ::ptrace(PTRACE_SYSCALL, tid, nullptr, 0) != 0 || !wait_stop(tid, &status) ||
      !is_syscall_stop(status)) {
    if (error) *error = "the thread could not be held at its system call";
    return std::nullopt;
  }
  t.held_ = true;
  return std::optional<BorrowedThread>(std::move(t));
}

BorrowedThread::BorrowedThread(BorrowedThread&& other) noexcept
    : pid_(other.pid_), tid_(other.tid_), saved_(other.saved_), held_(other.held_) {
  other.held_ = false;
}

BorrowedThread::~BorrowedThread() {
  if (held_) give_back(nullptr);
}

std::optional<int64_t> BorrowedThread::syscall(int64_t nr, std::initializer_list<uint64_t> args) {
  if (!held_) return std::nullopt;
  user_regs_struct regs = saved_;
  regs.rip = saved_.rip - 2;  // the thread's own `syscall`
  regs.rax = static_cast<unsigned long long>(nr);
  regs.orig_rax = static_cast<unsigned long long>(-1);
  set_args(regs, args, true);
  if (!set_regs(tid_, regs)) return std::nullopt;
  int status = 0;
  int sig = 0;
  // To its entry stop, then its exit stop; the program's signals that come
  // meanwhile are delivered (its handlers run as for any system call). A
  // handler's own system calls stop here too: ours is the one entered at
  // the thread's `syscall` with our number, and its exit is the next stop.
  // A bounded number of stops: a handler that never returns (siglongjmp
  // out of it) must not keep us here with the thread's registers ours.
  bool entered = false;
  for (int stops = 0; stops < 10000; ++stops) {
    if (::ptrace(PTRACE_SYSCALL, tid_, nullptr, sig) != 0 || !wait_stop(tid_, &status)) return std::nullopt;
    sig = 0;
    if (!is_syscall_stop(status)) {
      if (!is_event_stop(status)) sig = WSTOPSIG(status);
      continue;
    }
    int64_t stop_nr = -1;
    const int kind = syscall_stop_kind(tid_, &stop_nr);
    if (!get_regs(tid_, &regs)) return std::nullopt;
    if (!entered) {
      // (kind -1: a kernel without PTRACE_GET_SYSCALL_INFO; stops alternate.)
      entered = (kind == PTRACE_SYSCALL_INFO_ENTRY || kind == -1) &&
                regs.orig_rax == static_cast<unsigned long long>(nr) && regs.rip == saved_.rip;
    } else if (kind == PTRACE_SYSCALL_INFO_EXIT || kind == -1) {
      return static_cast<int64_t>(regs.rax);
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> BorrowedThread::call(uint64_t fn, std::initializer_list<uint64_t> args, uint64_t trap,
                                             std::string* error) {
  if (!held_) return std::nullopt;
  user_regs_struct regs = saved_;
  // Below the red zone, 16-aligned at the call, the return address the trap.
  uint64_t sp = ((saved_.rsp - 256) & ~uint64_t{15}) - 8;
  if (!write_remote(pid_, sp, &trap, sizeof trap)) {
    if (error) *error = "cannot write to the thread's stack: " + errno_text(errno);
    return std::nullopt;
  }
  regs.rsp = sp;
  regs.rip = fn;
  regs.rax = 0;
  regs.orig_rax = static_cast<unsigned long long>(-1);
  set_args(regs, args, false);
  if (!set_regs(tid_, regs)) return std::nullopt;
  int status = 0;
  int sig = 0;
  // Every system call of the function stops it too: ours is the getpid of
  // kReturnStub (its first stop there is the entry).
  const uint64_t stub_end = trap + sizeof kReturnStub;
  for (;;) {
    if (::ptrace(PTRACE_SYSCALL, tid_, nullptr, sig) != 0 || !wait_stop(tid_, &status)) {
      if (error) *error = "the thread ended during the call";
      held_ = false;
      return std::nullopt;
    }
    sig = 0;
    if (is_event_stop(status)) continue;
    if (!is_syscall_stop(status)) {
      sig = WSTOPSIG(status);  // the program's own signal (or a fault of the call: it is the program's then)
      continue;
    }
    if (get_regs(tid_, &regs) && regs.orig_rax == SYS_getpid && regs.rip == stub_end) break;
  }
  // Held back as take() holds the thread's own call: no system call (-1),
  // on to its exit stop, where the next syscall(), call() or give_back()
  // starts from.
  const uint64_t result = regs.rdi;
  regs.orig_rax = static_cast<unsigned long long>(-1);
  if (!set_regs(tid_, regs) || ::ptrace(PTRACE_SYSCALL, tid_, nullptr, 0) != 0 || !wait_stop(tid_, &status) ||
      !is_syscall_stop(status)) {
    if (error) *error = "the thread could not be held after the call";
    held_ = false;
    return std::nullopt;
  }
  return result;
}

bool BorrowedThread::give_back(std::string* error) {
  if (!held_) return true;
  held_ = false;
  // The system call it was entering, again from its `syscall` instruction,
  // with every register as it was.
  user_regs_struct regs = saved_;
  regs.rip = saved_.rip - 2;
  regs.rax = saved_.orig_rax;
  regs.orig_rax = static_cast<unsigned long long>(-1);
  if (!set_regs(tid_, regs) || ::ptrace(PTRACE_DETACH, tid_, nullptr, 0) != 0) {
    if (error) *error = "cannot give the thread back: " + errno_text(errno);
    return false;
  }
  return true;
}

}  // namespace callscope::inject
