// Working inside another running process (callscope attach, issue 15): its
// memory map, the addresses of the functions its libraries export, and one
// of its threads borrowed with ptrace to make system calls and function
// calls there. Only the borrowed thread stops, and only while it is
// borrowed; the others run on.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace callscope::inject {

// One line of /proc/PID/maps.
struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;  // "r-xp"
  std::string path;   // "" for anonymous memory, "[vdso]", a file
};

// The mappings of process `pid`, in address order; nullopt with `error`
// set when they cannot be read (no such process, not allowed).
std::optional<std::vector<Mapping>> read_maps(pid_t pid, std::string* error);

// The address in the process of `symbol` as the first module mapped whose
// file name (the path's last component) `module_is` accepts exports it (its
// dynamic symbol table): 0 when no such module is mapped or it does not
// export the symbol, with `error` saying which.
uint64_t remote_symbol(const std::vector<Mapping>& maps, const std::function<bool(std::string_view)>& module_is,
                       const char* symbol, std::string* error);

// Whether `name` is glibc's C library (libc.so.6, or libc-2.xx.so).
bool is_libc(std::string_view name);

// Reads or writes `n` bytes of process `pid` at `addr` (process_vm_readv /
// writev: any mapping, whatever its protection for writes through ptrace's
// /proc/PID/mem, readable or writable ones here). False on a short transfer.
bool read_remote(pid_t pid, uint64_t addr, void* out, size_t n);
bool write_remote(pid_t pid, uint64_t addr, const void* in, size_t n);

// Monotonic milliseconds (the deadlines below).
uint64_t now_ms();
// The threads of process `pid` (/proc/PID/task), its main thread first.
std::vector<pid_t> threads_of(pid_t pid);

// ptrace helpers. Waits for the next stop (or end) of traced thread `tid`:
// false when it ended or waiting failed, or (with a deadline, monotonic ms)
// when none came by then.
bool wait_stop(pid_t tid, int* status, uint64_t deadline_ms = 0);
bool get_regs(pid_t tid, user_regs_struct* regs);
bool set_regs(pid_t tid, const user_regs_struct& regs);
// A PTRACE_EVENT stop (PTRACE_INTERRUPT's among them), not a signal's.
bool is_event_stop(int status);

// A thread of another process, borrowed: stopped at the entry of one of
// its system calls, which is held back and made when the thread is given
// back. Taken at a system call, the thread is outside the code it was
// running (not halfway through the allocator, which makes its own system
// calls only for memory: those are let through and the next one taken).
// Nor inside glibc's own windows with every signal blocked (pthread_create
// around its clone, a thread's last moments, posix_spawn): a thread it
// starts there would inherit that mask as its own (and the thread may hold
// glibc's lock of thread stacks).
// Where a call made in a borrowed thread returns to: `mov %rax,%rdi; mov
// $SYS_getpid,%eax; syscall`, a system call whose entry stops the thread
// with the result in rdi. Not a breakpoint: a SIGTRAP the thread blocks (or
// ignores) would be forced on it, and the kernel unblocks it in the thread
// and resets its handler to the default for good.
inline constexpr unsigned char kReturnStub[10] = {0x48, 0x89, 0xc7, 0xb8, 39, 0, 0, 0, 0x0f, 0x05};

class BorrowedThread {
 public:
  // Seizes thread `tid` of process `pid` and waits up to `timeout_ms` for
  // it to enter a system call. On failure the thread runs on as it was and
  // `error` says why (EPERM: not allowed to trace; a thread that made no
  // system call in time).
  static std::optional<BorrowedThread> take(pid_t pid, pid_t tid, int timeout_ms, std::string* error);

  BorrowedThread(BorrowedThread&& other) noexcept;
  BorrowedThread& operator=(BorrowedThread&&) = delete;
  BorrowedThread(const BorrowedThread&) = delete;
  ~BorrowedThread();  // gives the thread back if give_back() was not called

  // Makes system call `nr` with up to six arguments in the thread; its
  // result (-errno on failure), nullopt when the thread could not be run
  // (it died).
  std::optional<int64_t> syscall(int64_t nr, std::initializer_list<uint64_t> args);
  // Calls the function at `fn` with up to six integer arguments, on the
  // thread's stack below its red zone, returning to `trap`, which must hold
  // kReturnStub in executable code of ours in the process; the function's
  // result. Signals that arrive meanwhile are delivered.
  std::optional<uint64_t> call(uint64_t fn, std::initializer_list<uint64_t> args, uint64_t trap, std::string* error);
  // The thread as it was when taken, its system call made as it meant to,
  // no longer traced. False when it could not be (the thread is gone).
  bool give_back(std::string* error);

  pid_t pid() const { return pid_; }
  pid_t tid() const { return tid_; }
  // The address of the thread's `syscall` instruction (where it was taken).
  uint64_t syscall_insn() const { return saved_.rip - 2; }

 private:
  BorrowedThread(pid_t pid, pid_t tid) : pid_(pid), tid_(tid) {}
  bool run_to_syscall_stop(int* status);
  pid_t pid_ = 0, tid_ = 0;
  user_regs_struct saved_{};  // at the entry of the held-back system call
  bool held_ = false;         // traced by us, not yet given back
};

}  // namespace callscope::inject
