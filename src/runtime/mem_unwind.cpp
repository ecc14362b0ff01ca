// Call paths by unwinding (record --memory on a program without
// -finstrument-functions): at each allocation the thread's stack is walked
// and each return address mapped to its function's start, which the runtime
// turns into the entries and exits of the frames that changed since the
// thread's last allocation (memory.cpp, sync_unwound).
//
// Two walks:
//  - DWARF (the default): libunwind's unw_backtrace, which reads the
//    .eh_frame every x86-64 object carries and keeps a per-thread cache of
//    each address's rule: right whether or not the code keeps frame
//    pointers.
// Which one: CALLSCOPE_UNWIND, from record --unwind. auto (the default) is
// decided here, per process: DWARF when the executable has no hooks, none
// when it has (an exec'd program decides for itself).
//  - frame pointers (--unwind fp): the rbp chain, checked to climb inside
//    the thread's stack; a few nanoseconds, but only right when every
//    function on the path keeps its frame pointer (-fno-omit-frame-pointer).
//    A function that does not ends the walk or hides its caller.
// Function starts come from the .eh_frame's FDEs (unw_get_proc_info_by_ip),
// remembered in a table of fixed size shared by all threads: no allocation.
#define UNW_LOCAL_ONLY
#include "runtime/mem_unwind.h"

#include <elf.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALLSCOPE_NOINSTR __attribute__((no_instrument_function))

namespace callscope::rt {
namespace {

UnwindMode g_mode = UnwindMode::kOff;

// This library's code: frames in it are skipped (the walk starts here).
uintptr_t g_self_lo = 0, g_self_hi = 0;

CALLSCOPE_NOINSTR int find_self(struct dl_phdr_info* info, size_t, void* data) {
  const uintptr_t here = reinterpret_cast<uintptr_t>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (here >= lo && here < lo + ph.p_memsz) {
      g_self_lo = lo;
      g_self_hi = lo + ph.p_memsz;
      return 1;
    }
  }
  return 0;
}

// Return address -> function start. Open addressing over 64 Ki slots; a
// slot is claimed by a compare-and-swap of its key and filled after, so a
// reader that sees a key without its start looks the address up itself.
constexpr uint32_t kSlots = 1u << 16;
constexpr uint32_t kProbes = 8;
struct Slot {
  uint64_t ip;
  uint64_t start;
};
Slot g_starts[kSlots];

CALLSCOPE_NOINSTR uint64_t lookup_start(uint64_t ip) {
  // ip - 1: a call that never returns may be the last instruction of its
  // function, and its return address the next function's first.
  unw_proc_info_t pi;
  memset(&pi, 0, sizeof pi);
  if (unw_get_proc_info_by_ip(unw_local_addr_space, ip - 1, &pi, nullptr) == 0 && pi.start_ip && pi.start_ip < ip)
    return pi.start_ip;
  return ip;  // no FDE (hand-written code without CFI): the address stands for its function
}

CALLSCOPE_NOINSTR uint64_t function_start(uint64_t ip) {
  uint32_t h = static_cast<uint32_t>((ip * 0x9e3779b97f4a7c15ull) >> 48) & (kSlots - 1);
  for (uint32_t i = 0; i < kProbes; ++i, h = (h + 1) & (kSlots - 1)) {
    Slot& s = g_starts[h];
    uint64_t key = __atomic_load_n(&s.ip, __ATOMIC_ACQUIRE);
    if (key == ip) {
      const uint64_t start = __atomic_load_n(&s.start, __ATOMIC_ACQUIRE);
      return start ? start : lookup_start(ip);
    }
    if (key == 0) {
      const uint64_t start = lookup_start(ip);
      if (__atomic_compare_exchange_n(&s.ip, &key, ip, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        __atomic_store_n(&s.start, start, __ATOMIC_RELEASE);
      return start;
    }
  }
  return lookup_start(ip);  // the neighbourhood is full
}

// The calling thread's stack, for the frame-pointer walk.
__thread uintptr_t t_stack_lo __attribute__((tls_model("initial-exec"))) = 0;
__thread uintptr_t t_stack_hi __attribute__((tls_model("initial-exec"))) = 0;

CALLSCOPE_NOINSTR bool stack_bounds() {
  if (t_stack_hi) return true;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;  // may allocate: told as ours (t_quiet)
  void* addr = nullptr;
  size_t size = 0;
  const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0 && size;
  pthread_attr_destroy(&attr);
  if (!ok) return false;
  t_stack_lo = reinterpret_cast<uintptr_t>(addr);
  t_stack_hi = t_stack_lo + size;
  return true;
}

CALLSCOPE_NOINSTR __attribute__((noinline)) uint32_t walk_frame_pointers(uint64_t* ips, uint32_t max) {
  if (!stack_bounds()) return 0;
  uint32_t n = 0;
  auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  while (n < max) {
    if (fp < t_stack_lo || fp + 16 > t_stack_hi || (fp & 7)) break;
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t ret = frame[1];
    if (ret < 4096) break;
    ips[n++] = ret;
    const uintptr_t next = frame[0];
    if (next <= fp) break;  // a stack grows down: a caller's frame is above
    fp = next;
  }
  return n;
}

// Whether this process's executable calls the hooks of -finstrument-functions:
// their name in its .dynstr (an instrumented program imports them from the
// runtime). Read with pread, in pieces, into the stack: no allocation, and
// none of this library's wrapped calls.
CALLSCOPE_NOINSTR bool executable_has_hooks() {
  static const char kName[] = "\0__cyg_profile_func_enter";  // with the NUL before and after
  constexpr size_t kLen = sizeof kName;                        // 26: both NULs
  const int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // cannot tell: keep the hooks
  bool found = false;
  ElfW(Ehdr) eh;
  if (::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
      eh.e_shentsize == sizeof(ElfW(Shdr))) {
    for (unsigned i = 0; i < eh.e_shnum && !found; ++i) {
      ElfW(Shdr) sh, str;
      if (::pread(fd, &sh, sizeof sh, static_cast<off_t>(eh.e_shoff + i * sizeof sh)) != static_cast<ssize_t>(sizeof sh))
        break;
      if (sh.sh_type != SHT_DYNSYM || sh.sh_link >= eh.e_shnum) continue;
      if (::pread(fd, &str, sizeof str, static_cast<off_t>(eh.e_shoff + sh.sh_link * sizeof str)) !=
          static_cast<ssize_t>(sizeof str))
        break;
      char buf[4096];
      // Pieces overlapping by the name's length, so none is cut in two.
      for (uint64_t at = 0; at < str.sh_size && !found; at += sizeof buf - kLen) {
        const ssize_t got = ::pread(fd, buf, sizeof buf, static_cast<off_t>(str.sh_offset + at));
        if (got <= 0) break;
        const size_t n = static_cast<size_t>(got) < str.sh_size - at ? static_cast<size_t>(got) : str.sh_size - at;
        found = memmem(buf, n, kName, kLen) != nullptr;
        if (n < sizeof buf) break;
      }
    }
  }
  ::close(fd);
  return found;
}

}  // namespace

CALLSCOPE_NOINSTR void unwind_configure() {
  static bool configured = false;  // first from a constructor: one thread
  if (configured) return;
  configured = true;
  const char* v = ::getenv("CALLSCOPE_UNWIND");
  if (!v) return;
  if (strcmp(v, "dwarf") == 0) g_mode = UnwindMode::kDwarf;
  else if (strcmp(v, "fp") == 0) g_mode = UnwindMode::kFramePointers;
  else if (strcmp(v, "auto") == 0 && !executable_has_hooks()) g_mode = UnwindMode::kDwarf;
  if (g_mode == UnwindMode::kOff) return;
  dl_iterate_phdr(find_self, reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&unwind_here)));
}

CALLSCOPE_NOINSTR UnwindMode unwind_mode() { return g_mode; }

CALLSCOPE_NOINSTR uint32_t unwind_here(uint64_t* fns, uint64_t* sites) {
  // Room for this library's own frames too.
  uint64_t ips[kMaxUnwoundFrames + 8];
  constexpr uint32_t kRoom = kMaxUnwoundFrames + 8;
  uint32_t got;
  if (g_mode == UnwindMode::kFramePointers) {
    got = walk_frame_pointers(ips, kRoom);
  } else {
    const int r = unw_backtrace(reinterpret_cast<void**>(ips), static_cast<int>(kRoom));
    got = r > 0 ? static_cast<uint32_t>(r) : 0;
  }
  // The walk starts in here (or in libunwind, called from here): skip to the
  // first frame past this library's last.
  uint32_t first = 0;
  for (uint32_t i = 0; i < got && i < 16; ++i)
    if (ips[i] >= g_self_lo && ips[i] < g_self_hi) first = i + 1;
  uint32_t n = 0;
  for (uint32_t i = first; i < got && n < kMaxUnwoundFrames; ++i) {
    if (ips[i] == 0) break;
    sites[n] = ips[i];
    fns[n] = function_start(ips[i]);
    ++n;
  }
  return n;
}

}  // namespace callscope::rt
