// Entries that cost nothing while tracing is off: the nops of
// -fpatchable-function-entry (listed in __patchable_function_entries) and of
// gcc's -pg -mnop-mcount -mrecord-mcount (listed in __mcount_loc) become
// jumps to stubs of ours (or calls of mcount) while tracing is on, and nops
// again while it is off (--start-off, ctl stop).
//
// Each site gets 5 bytes: gcc's N one-byte nops (N >= 5), clang's one
// five-byte nop, after endbr64 under -fcf-protection. When a module is found
// (at start; in the dlopen wrapper, after the library's constructors ran and
// before dlopen returns: a thread a constructor started that sits between
// two of gcc's nops then is the one case not covered) its sites are made one
// five-byte nop each, so that from then on every
// change swaps one instruction for another, while the program's threads
// run. That is the safe way to modify code other threads may be executing
// on x86-64: a breakpoint byte first, then the last four bytes, then the
// first byte, with a core-serializing membarrier after each step; a thread
// that reaches a site in between traps, and our SIGTRAP handler completes
// what the site is becoming (the jump or call, or the nop). Text pages are writable
// only for the moment of a change; a system that forbids it is named.
//
// A site at a function's start becomes a jump to a stub of its own, which
// calls the runtime, then the function, then the runtime again
// (trampolines.S, callscope_rt_stub_pre): the function returns into the stub
// and the stub to the caller, each return where the processor predicts it.
// A site after a -pg prologue (mcount's) cannot call its function again: it
// becomes a call of mcount, which replaces the return address (libcall.cpp).
// The stubs, and `jmp *0(%rip)` and an address for each runtime entry they
// use, are in a region of our own within 2 GiB of the module (a jump's
// displacement is 32 bits).
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime/engine_state.h"
#include "runtime/heap_sort.h"
#include "runtime/module_bounds.h"
#include "runtime/patch/patch.h"
#include "runtime/path_buf.h"
#include "runtime/runtime.h"

extern "C" void callscope_rt_mcount();  // trampolines.S: mcount, by a name nothing interposes

namespace callscope::rt {

// libc's sigaction, past our wrapper (the end of this file).
SigactionFn g_real_sigaction = nullptr;
SigactionFn real_sigaction() { return next_symbol(&g_real_sigaction, "sigaction"); }

namespace {

struct Site {
  uint64_t addr;    // the 5 bytes
  uint64_t target;  // where they go while tracing is on: the site's stub, or the mcount entry
  uint32_t sled;    // bytes of nops found there (5 or more)
  uint32_t mcount;  // 1: after a -pg prologue (a call of mcount), 0: a function's first bytes (a jump to its stub)
  // The site's first 5 bytes as the compiler left them, given back at a
  // detach when that is safe: when the sled's bytes past them are one-byte
  // nops we left as they were (gcc's N nops, clang's single one). Else the
  // site stays one five-byte nop, which runs the same.
  uint8_t orig[5];
  uint8_t orig_exact;
};

// The near region of a module: the runtime's entries, then one stub per
// site at a function's start.
enum RegionEntry : uint32_t { kMcountEntry = 0, kStubPre = 1, kStubPost = 2, kFirstStub = 4 };
constexpr uint64_t kStubBytes = 16;

struct CodeModule {
  uint64_t bias, low, high;
  uint64_t text_lo, text_hi;  // the executable segment, page-aligned
  uint32_t first, count;      // its sites in g_sites, sorted by address
  bool seen;                  // found by the current scan
};

constexpr uint32_t kMaxSites = 1u << 22;
constexpr int kMaxCodeModules = 1024;
Site* g_sites = nullptr;
uint32_t g_site_count = 0;
CodeModule g_cmods[kMaxCodeModules];
int g_cmod_count = 0;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
// What the sites are becoming: calls (1) or nops (0). Read by the trap
// handler for a site caught halfway.
volatile int g_on = 0;
uint64_t g_unsafe_sites = 0;  // attached: sites left alone (add_site)
// The modules being scanned may have run on the program's threads already
// (attached, and not just loaded by our dlopen wrapper): add_site takes
// only sites that are one instruction. Under g_lock.
bool g_threads_ran_them = false;
bool g_code_detached = false;  // code_patch_detach: no site is made a call again
bool g_membarrier = false;
bool g_handler = false;
struct sigaction g_old_trap;

constexpr uint8_t kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

CALLSCOPE_NOINSTR void say(const char* a, const char* b, const char* c) {
  const char* parts[3] = {a, b, c};
  for (const char* s : parts) {
    ssize_t ignored = ::write(2, s, strlen(s));
    (void)ignored;
  }
}

CALLSCOPE_NOINSTR void serialize_cores() {
  if (g_membarrier) ::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

// The site at `addr`, if it is one of ours.
CALLSCOPE_NOINSTR const Site* find_site(uint64_t addr) {
  for (int m = 0; m < g_cmod_count; ++m) {
    const CodeModule& cm = g_cmods[m];
    if (addr < cm.low || addr >= cm.high || cm.count == 0) continue;
    uint32_t lo = cm.first, hi = cm.first + cm.count;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (g_sites[mid].addr < addr) lo = mid + 1;
      else hi = mid;
    }
    if (lo < cm.first + cm.count && g_sites[lo].addr == addr) return &g_sites[lo];
  }
  return nullptr;
}

// A thread reached a site between the first and the last step of a change:
// it runs what the site is becoming.
CALLSCOPE_NOINSTR void on_trap(int sig, siginfo_t* info, void* ctx) {
  auto* uc = static_cast<ucontext_t*>(ctx);
  const uint64_t rip = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  const Site* s = find_site(rip - 1);
  if (s) {
    if (*reinterpret_cast<const volatile uint8_t*>(s->addr) != 0xcc) {
      // The change was completed meanwhile: run the site's new instruction.
      uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(s->addr);
    } else if (g_on) {  // the jump to the stub, or the call of mcount (its return address pushed)
      if (s->mcount) {
        const uint64_t sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]) - 8;
        *reinterpret_cast<uint64_t*>(sp) = s->addr + 5;
        uc->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp);
      }
      uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(s->target);
    } else {
      uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(s->addr + 5);
    }
    return;
  }
  // Not ours: the program's handler, or the default action.
  if ((g_old_trap.sa_flags & SA_SIGINFO) && g_old_trap.sa_sigaction) {
    g_old_trap.sa_sigaction(sig, info, ctx);
  } else if (g_old_trap.sa_handler == SIG_IGN) {
  } else if (g_old_trap.sa_handler != SIG_DFL && g_old_trap.sa_handler) {
    g_old_trap.sa_handler(sig);
  } else {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    if (real_sigaction()) real_sigaction()(SIGTRAP, &dfl, nullptr);
    ::raise(SIGTRAP);
  }
}

CALLSCOPE_NOINSTR void install_handler() {
  if (g_handler) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_trap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  g_handler = real_sigaction() && real_sigaction()(SIGTRAP, &sa, &g_old_trap) == 0;
}

// `size` bytes of fresh memory within 2 GiB of every byte of [low, high),
// readable and writable; 0 if none could be mapped.
CALLSCOPE_NOINSTR uint64_t near_region(uint64_t low, uint64_t high, uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (uint64_t d = uint64_t{1} << 20; d + size + (high - low) < (uint64_t{1} << 31); d += uint64_t{1} << 20) {
    for (int side = 0; side < 2; ++side) {
      if (side == 0 && low < d + size + page) continue;
      const uint64_t want = side == 0 ? ((low - d - size) & ~(page - 1)) : ((high + d) & ~(page - 1));
      void* m = ::mmap(reinterpret_cast<void*>(want), size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (m == MAP_FAILED) continue;
      if (reinterpret_cast<uint64_t>(m) != want) {  // an old kernel took it as a hint only
        ::munmap(m, size);
        continue;
      }
      return want;
    }
  }
  return 0;
}

CALLSCOPE_NOINSTR void put_rel32(uint8_t* at, uint8_t opcode, uint64_t to) {
  at[0] = opcode;
  const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(to) - static_cast<int64_t>(reinterpret_cast<uint64_t>(at) + 5));
  memcpy(at + 1, &rel, 4);
}

// Fills the near region of the sites [first, end) (all of one module) and
// makes it executable; sets each site's target. False if it stays
// writable (a policy forbids executable memory of ours).
CALLSCOPE_NOINSTR bool fill_region(uint64_t region, uint64_t size, uint32_t first, uint32_t end) {
  auto* p = reinterpret_cast<uint8_t*>(region);
  const uint64_t entries[3] = {reinterpret_cast<uint64_t>(&callscope_rt_mcount), reinterpret_cast<uint64_t>(&callscope_rt_stub_pre),
                               reinterpret_cast<uint64_t>(&callscope_rt_stub_post)};
  for (int k = 0; k < 3; ++k) {  // jmp *0(%rip), then the address
    uint8_t* j = p + kStubBytes * k;
    j[0] = 0xff;
    j[1] = 0x25;
    memset(j + 2, 0, 4);
    memcpy(j + 6, &entries[k], 8);
  }
  uint64_t next = region + kStubBytes * kFirstStub;
  for (uint32_t i = first; i < end; ++i) {
    Site& s = g_sites[i];
    if (s.mcount) {
      s.target = region + kStubBytes * kMcountEntry;
      continue;
    }
    auto* stub = reinterpret_cast<uint8_t*>(next);
    put_rel32(stub, 0xe8, region + kStubBytes * kStubPre);    // call stub_pre
    put_rel32(stub + 5, 0xe8, s.addr + 5);                    // call the body
    put_rel32(stub + 10, 0xe9, region + kStubBytes * kStubPost);  // jmp stub_post
    stub[15] = 0xcc;
    s.target = next;
    next += kStubBytes;
  }
  return ::mprotect(p, size, PROT_READ | PROT_EXEC) == 0;
}

// An ELF file read for its sections and function symbols (mapped while
// a module is scanned).
struct ElfFile {
  const char* base = nullptr;
  uint64_t size = 0;
  const Elf64_Shdr* sh = nullptr;
  unsigned shnum = 0;
  const char* names = nullptr;
  uint64_t names_size = 0;
};

CALLSCOPE_NOINSTR bool open_elf(const char* path, ElfFile& f) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    ::close(fd);
    return false;
  }
  f.size = static_cast<uint64_t>(st.st_size);
  void* map = ::mmap(nullptr, f.size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return false;
  f.base = static_cast<const char*>(map);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(f.base);
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shoff != 0 &&
      eh->e_shoff + uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) <= f.size && eh->e_shstrndx < eh->e_shnum) {
    f.sh = reinterpret_cast<const Elf64_Shdr*>(f.base + eh->e_shoff);
    f.shnum = eh->e_shnum;
    const Elf64_Shdr& n = f.sh[eh->e_shstrndx];
    if (n.sh_offset + n.sh_size <= f.size) {
      f.names = f.base + n.sh_offset;
      f.names_size = n.sh_size;
      return true;
    }
  }
  ::munmap(map, f.size);
  return false;
}

CALLSCOPE_NOINSTR void close_elf(ElfFile& f) {
  if (f.base) ::munmap(const_cast<char*>(f.base), f.size);
  f.base = nullptr;
}

// The loaded section called `name`: its link-time address and size.
CALLSCOPE_NOINSTR bool find_section(const ElfFile& f, const char* name, uint64_t* addr, uint64_t* size) {
  for (unsigned i = 0; i < f.shnum; ++i)
    if (f.sh[i].sh_name < f.names_size && (f.sh[i].sh_flags & SHF_ALLOC) && f.sh[i].sh_type != SHT_NOBITS &&
        strcmp(f.names + f.sh[i].sh_name, name) == 0) {
      *addr = f.sh[i].sh_addr;
      *size = f.sh[i].sh_size;
      return true;
    }
  return false;
}

// The first bytes of the functions of .symtab, link-time, sorted; nullptr
// (and 0) when there are none: a stripped file (whose .dynsym names only
// what it exports, not every function).
CALLSCOPE_NOINSTR uint64_t* function_starts(const ElfFile& f, uint64_t* count) {
  *count = 0;
  const Elf64_Shdr* symtab = nullptr;
  for (unsigned i = 0; i < f.shnum; ++i)
    if (f.sh[i].sh_type == SHT_SYMTAB) symtab = &f.sh[i];
  if (!symtab || symtab->sh_offset + symtab->sh_size > f.size) return nullptr;
  const auto* syms = reinterpret_cast<const Elf64_Sym*>(f.base + symtab->sh_offset);
  const uint64_t n = symtab->sh_size / sizeof(Elf64_Sym);
  auto is_function = [](const Elf64_Sym& y) {
    return (ELF64_ST_TYPE(y.st_info) == STT_FUNC || ELF64_ST_TYPE(y.st_info) == STT_GNU_IFUNC) &&
           y.st_shndx != SHN_UNDEF;
  };
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; ++i) k += is_function(syms[i]) ? 1 : 0;
  if (k == 0) return nullptr;
  auto* out = static_cast<uint64_t*>(map_anon(k * 8));
  if (!out) return nullptr;
  k = 0;
  for (uint64_t i = 0; i < n; ++i)
    if (is_function(syms[i])) out[k++] = syms[i].st_value;
  heap_sort(out, k, [](uint64_t x, uint64_t y) { return x < y; });
  *count = k;
  return out;
}

CALLSCOPE_NOINSTR bool contains(const uint64_t* a, uint64_t n, uint64_t v) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (a[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && a[lo] == v;
}

// The length of the nop instruction at p (the forms compilers emit for
// padding: 90, 66 90, 0f 1f /0 with its addressing forms, with 66 and 2e
// prefixes), 0 if it is none.
CALLSCOPE_NOINSTR int nop_length(const uint8_t* p) {
  int prefixes = 0;
  while (prefixes < 3 && (p[prefixes] == 0x66 || p[prefixes] == 0x2e)) ++prefixes;
  const uint8_t* q = p + prefixes;
  if (q[0] == 0x90) return prefixes + 1;
  if (q[0] != 0x0f || q[1] != 0x1f || ((q[2] >> 3) & 7) != 0) return 0;
  const uint8_t mod = q[2] >> 6, rm = q[2] & 7;
  if (mod == 3) return 0;
  int len = 3;
  if (rm == 4) ++len;  // SIB
  if (mod == 1) len += 1;
  else if (mod == 2) len += 4;
  else if (rm == 5) len += 4;  // rip-relative
  return prefixes + len;
}

// A site listed at `addr`. A patchable entry must begin its function (or
// follow its endbr64): with -fpatchable-function-entry=N,M and M > 0 the
// list gives nops before the function, which a call must not straddle. A
// module without .symtab (stripped) is taken at its word.
// The file's bytes at address `vaddr` (before relocation): what the
// compiler wrote there, whatever a tool did to the memory since (attach's
// joining of gcc's sleds, inject/sleds.h). False when no section holds them.
CALLSCOPE_NOINSTR bool file_bytes(const ElfFile& f, uint64_t vaddr, uint8_t* out, uint64_t n) {
  for (unsigned i = 0; i < f.shnum; ++i) {
    const Elf64_Shdr& s = f.sh[i];
    if (!(s.sh_flags & SHF_ALLOC) || s.sh_type == SHT_NOBITS || vaddr < s.sh_addr || vaddr + n > s.sh_addr + s.sh_size)
      continue;
    if (s.sh_offset + (vaddr - s.sh_addr) + n > f.size) return false;
    memcpy(out, f.base + s.sh_offset + (vaddr - s.sh_addr), n);
    return true;
  }
  return false;
}

CALLSCOPE_NOINSTR void add_site(uint64_t addr, uint64_t bias, uint64_t lo, uint64_t hi, bool patchable,
                                const uint64_t* starts, uint64_t nstarts, const ElfFile& file) {
  if (g_site_count == kMaxSites || addr < lo || addr + 20 > hi) return;
  auto* p = reinterpret_cast<uint8_t*>(addr);
  const bool after_endbr = memcmp(p - 4, kEndbr64, 4) == 0;
  const bool at_start =
      starts && (contains(starts, nstarts, addr - bias) || (after_endbr && contains(starts, nstarts, addr - 4 - bias)));
  if (patchable && starts && !at_start) return;
  // An __mcount_loc site: __fentry__'s at a function's first bytes (-mfentry),
  // else mcount's (after the prologue, which set up %rbp); without symbols,
  // told by the prologue before it.
  static const uint8_t kFramePrologue[4] = {0x55, 0x48, 0x89, 0xe5};  // push %rbp; mov %rsp,%rbp
  const uint32_t mcount =
      !patchable && (starts ? !at_start : memcmp(p - 4, kFramePrologue, 4) == 0) ? 1 : 0;
  if (patchable && memcmp(p, kEndbr64, 4) == 0) p += 4;  // the nops come after endbr64
  // The nops there: gcc's N one-byte ones, clang's one or two long ones.
  int sled = 0;
  for (int n; sled < 16 && (n = nop_length(p + sled)) > 0;) sled += n;
  if (sled < 5) return;  // -fpatchable-function-entry=N with N < 5, or not a site
  // Attached, the program's threads run this code while we change it: only
  // a site whose first five bytes are one instruction (clang's nop, gcc's
  // -mnop-mcount) can be, with nothing after them to rewrite. gcc's
  // patchable entries are five one-byte nops: a thread may be between two
  // of them, and would resume inside the jump.
  if (g_threads_ran_them) {
    bool safe = nop_length(p) == 5;
    for (int k = 5; k < sled && safe; ++k) safe = p[k] == 0x90;
    if (!safe) {
      ++g_unsafe_sites;
      return;
    }
  }
  Site s{reinterpret_cast<uint64_t>(p), 0, static_cast<uint32_t>(sled), mcount, {}, 1};
  uint8_t orig[16];
  if (!file_bytes(file, reinterpret_cast<uint64_t>(p) - bias, orig, static_cast<uint64_t>(sled)))
    memcpy(orig, p, static_cast<size_t>(sled));
  memcpy(s.orig, orig, 5);
  for (int k = 5; k < sled; ++k) s.orig_exact &= orig[k] == 0x90;
  if (sled > 5 && nop_length(orig) != 1 && nop_length(orig) != 5) s.orig_exact = 0;  // a long nop reaching past the 5 bytes
  g_sites[g_site_count++] = s;
}

CALLSCOPE_NOINSTR void site_bytes(const Site& s, bool on, uint8_t* out);

// Whether a site holds what we put there: the nop, the call, or a breakpoint.
CALLSCOPE_NOINSTR bool ours(const Site& s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.addr);
  if (p[0] == 0xcc || memcmp(p, kNop5, 4) == 0) return true;
  uint8_t call[5];
  site_bytes(s, true, call);
  return memcmp(p, call, 5) == 0;
}

// Writes the 5 bytes of every site of `cm` that differs from what `want(s)`
// gives, in the three steps (the first time, the rest of each site's nops
// too).
template <class Want>
CALLSCOPE_NOINSTR bool rewrite(const CodeModule& cm, const char* path, bool first_time, Want&& want) {
  if (cm.count == 0) return true;
  if (::mprotect(reinterpret_cast<void*>(cm.text_lo), cm.text_hi - cm.text_lo, PROT_READ | PROT_WRITE | PROT_EXEC) !=
      0) {
    if (errno == ENOMEM) return false;  // unmapped: a library closed meanwhile
    char why[64] = "";
    const char* e = errno == EACCES ? "permission denied" : errno == EPERM ? "not permitted" : "failed";
    strncpy(why, e, sizeof why - 1);
    say("callscope: cannot patch the function entries of ", path[0] ? path : "the program", "");
    say(": making its code writable was refused (", why,
        "; a policy such as SELinux execmod forbids writable code): they stay unrecorded\n");
    return false;
  }
  uint8_t bytes[5];
  if (first_time) {
    // Past the 5 bytes that change: one-byte nops, for good. Written before
    // any thread runs this code (the header).
    for (uint32_t i = cm.first; i < cm.first + cm.count; ++i)
      for (uint32_t k = 5; k < g_sites[i].sled; ++k) reinterpret_cast<uint8_t*>(g_sites[i].addr)[k] = 0x90;
  }
  for (uint32_t i = cm.first; i < cm.first + cm.count; ++i) {
    want(g_sites[i], bytes);
    auto* p = reinterpret_cast<volatile uint8_t*>(g_sites[i].addr);
    // Only bytes we know are changed (a library that replaced the module at
    // the same place, between a dlclose and our next look, is left alone).
    if (memcmp(const_cast<const uint8_t*>(p), bytes, 5) != 0 && (first_time || ours(g_sites[i])))
      p[0] = 0xcc;
  }
  serialize_cores();
  for (uint32_t i = cm.first; i < cm.first + cm.count; ++i) {
    want(g_sites[i], bytes);
    auto* p = reinterpret_cast<volatile uint8_t*>(g_sites[i].addr);
    if (p[0] == 0xcc)
      for (int k = 1; k < 5; ++k) p[k] = bytes[k];
  }
  serialize_cores();
  for (uint32_t i = cm.first; i < cm.first + cm.count; ++i) {
    want(g_sites[i], bytes);
    auto* p = reinterpret_cast<volatile uint8_t*>(g_sites[i].addr);
    if (p[0] == 0xcc) p[0] = bytes[0];
  }
  serialize_cores();
  ::mprotect(reinterpret_cast<void*>(cm.text_lo), cm.text_hi - cm.text_lo, PROT_READ | PROT_EXEC);
  return true;
}

CALLSCOPE_NOINSTR void site_bytes(const Site& s, bool on, uint8_t* out) {
  if (!on) {
    memcpy(out, kNop5, 5);
    return;
  }
  out[0] = s.mcount ? 0xe8 : 0xe9;  // call mcount, or jmp to the stub
  const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(s.target) - static_cast<int64_t>(s.addr + 5));
  memcpy(out + 1, &rel, 4);
}

char g_path[4096];

// The modules dl_iterate_phdr lists, looked at after it returns (it holds a
// lock of the dynamic linker while it runs).
constexpr int kMaxListed = 4096;
dl_phdr_info g_listed[kMaxListed];
int g_listed_count = 0;

CALLSCOPE_NOINSTR int list_module(dl_phdr_info* info, size_t, void*) {
  if (g_listed_count < kMaxListed) g_listed[g_listed_count++] = *info;
  return 0;
}

CALLSCOPE_NOINSTR void scan_module(dl_phdr_info* info) {
  const ModuleBounds bounds = module_bounds(info);
  const uint64_t low = bounds.low, high = bounds.high, text_lo = bounds.text_lo, text_hi = bounds.text_hi;
  if (high == 0 || text_hi == 0) return;
  for (int m = 0; m < g_cmod_count; ++m)
    if (g_cmods[m].low == low && g_cmods[m].bias == info->dlpi_addr) {
      g_cmods[m].seen = true;
      return;
    }
  if (runtime_or_system_module(info, bounds, reinterpret_cast<const void*>(&serialize_cores))) return;
  if (g_cmod_count == kMaxCodeModules) return;
  if (module_relocating(info)) return;  // its list of entries is not relocated yet: a later pass
  const bool main = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  if (main) {
    const ssize_t n = ::readlink("/proc/self/exe", g_path, sizeof g_path - 1);
    g_path[n > 0 ? n : 0] = '\0';
  } else {
    strncpy(g_path, info->dlpi_name, sizeof g_path - 1);
  }
  CodeModule cm{info->dlpi_addr, low, high, text_lo, text_hi, g_site_count, 0, true};
  const uint64_t unsafe_before = g_unsafe_sites;
  ElfFile file;
  if (open_elf(g_path, file)) {
    uint64_t nstarts = 0;
    uint64_t* starts = nullptr;
    for (int kind = 0; kind < 2; ++kind) {
      const bool patchable = kind == 0;
      uint64_t addr = 0, size = 0;
      if (!find_section(file, patchable ? "__patchable_function_entries" : "__mcount_loc", &addr, &size)) continue;
      if (!starts) starts = function_starts(file, &nstarts);
      // The section is in memory, relocated: absolute addresses.
      const auto* entries = reinterpret_cast<const uint64_t*>(info->dlpi_addr + addr);
      for (uint64_t i = 0; i < size / 8; ++i)
        add_site(entries[i], info->dlpi_addr, text_lo, text_hi, patchable, starts, nstarts, file);
    }
    if (starts) ::munmap(starts, nstarts * 8);
    close_elf(file);
  }
  cm.count = g_site_count - cm.first;
  const bool unsafe = g_unsafe_sites != unsafe_before;
  if ((cm.count || unsafe) && !traps_reach_every_thread()) {  // said once, for every module
    g_site_count = cm.first;
    cm.count = 0;
  } else if (unsafe) {
    char count[24];
    PathBuf n;
    n.add_uint(g_unsafe_sites - unsafe_before);
    strncpy(count, n.c_str(), sizeof count - 1);
    count[sizeof count - 1] = '\0';
    notice(count, " patchable entries of ", g_path,
           " are not recorded: they are gcc's one-byte nops, which cannot be made a jump while the program's threads "
           "run them (attach joins them at its start, with the threads stopped; this library came later, not "
           "through dlopen)");
  }
  g_cmods[g_cmod_count++] = cm;  // also without sites: not read again
  if (cm.count == 0) return;
  heap_sort(g_sites + cm.first, cm.count, [](const Site& x, const Site& y) { return x.addr < y.addr; });
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t size = (kStubBytes * (kFirstStub + cm.count) + page - 1) & ~(page - 1);
  const uint64_t region = near_region(low, high, size);
  if (region == 0 || !fill_region(region, size, cm.first, g_site_count)) {
    say("callscope: no executable memory near ", g_path, " for the stubs of its patchable entries: they stay unrecorded\n");
    if (region) ::munmap(reinterpret_cast<void*>(region), size);
    g_site_count = cm.first;
    g_cmods[g_cmod_count - 1].count = 0;
    return;
  }
  install_handler();
  // One five-byte nop each first (no thread runs this code yet), then calls
  // if tracing is on.
  if (rewrite(g_cmods[g_cmod_count - 1], g_path, true, [](const Site& s, uint8_t* b) { site_bytes(s, false, b); }) &&
      g_on)
    rewrite(g_cmods[g_cmod_count - 1], g_path, false, [](const Site& s, uint8_t* b) { site_bytes(s, true, b); });
  return;
}

}  // namespace

void code_patch_init(bool on) {
  g_on = on ? 1 : 0;
  real_sigaction();  // looked up now, not in a wrapper a signal handler may call first
  g_sites = static_cast<Site*>(map_anon(uint64_t{kMaxSites} * sizeof(Site)));
  if (!g_sites) return;
  if (::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0) g_membarrier = true;
  code_patch_new_modules();
}

void code_patch_new_modules(bool just_loaded) {
  if (!g_sites || g_code_detached) return;
  const int saved_errno = errno;
  ThreadState* t = current_thread();
  const uint8_t was_in_hook = t->in_hook;
  t->in_hook = 1;
  signal_fence();
  ::pthread_mutex_lock(&g_lock);
  for (int m = 0; m < g_cmod_count; ++m) g_cmods[m].seen = false;
  g_listed_count = 0;
  ::dl_iterate_phdr(list_module, nullptr);
  g_threads_ran_them = g_attached && !just_loaded;
  for (int i = 0; i < g_listed_count; ++i) scan_module(&g_listed[i]);
  g_threads_ran_them = false;
  // Modules gone (dlclose) are never written again; one loaded at the same
  // place later is new. (Their sites' slots are not reused.) Their stubs
  // stay mapped: a function of theirs that ended with a tail call left its
  // stub's return point on the stack, and the callee may be what unloaded
  // it. Nothing is dropped when the list was cut short (kMaxListed).
  if (g_listed_count < kMaxListed) {
    int kept = 0;
    for (int m = 0; m < g_cmod_count; ++m)
      if (g_cmods[m].seen) g_cmods[kept++] = g_cmods[m];
    g_cmod_count = kept;
  }
  ::pthread_mutex_unlock(&g_lock);
  signal_fence();
  t->in_hook = was_in_hook;
  errno = saved_errno;
}

void code_patch_sync() {
  if (!g_sites || g_site_count == 0) return;
  const int saved_errno = errno;
  ::pthread_mutex_lock(&g_lock);
  const bool on = (control_word() & 1) != 0 && !g_code_detached;
  if ((g_on != 0) != on && !g_membarrier) {
    // Without a core-serializing barrier other threads could run stale
    // code: the sites stay as they are.
    static bool said = false;
    if (!said) say("callscope: this kernel has no membarrier SYNC_CORE: patchable entries stay as they were at "
                   "start (calls, or nops with --start-off) when tracing is switched", "\n", "");
    said = true;
  } else if ((g_on != 0) != on) {
    g_on = on ? 1 : 0;
    for (int m = 0; m < g_cmod_count; ++m)
      rewrite(g_cmods[m], "", false, [on](const Site& s, uint8_t* b) { site_bytes(s, on, b); });
  }
  ::pthread_mutex_unlock(&g_lock);
  errno = saved_errno;
}

void code_patch_detach() {
  if (!g_sites) return;
  ::pthread_mutex_lock(&g_lock);
  g_code_detached = true;
  ::pthread_mutex_unlock(&g_lock);
  // Without a core-serializing barrier the sites stay calls (code_patch_sync
  // says so): they reach a runtime that records nothing any more.
  code_patch_sync();
  if (!g_membarrier) return;
  ::pthread_mutex_lock(&g_lock);
  for (int m = 0; m < g_cmod_count; ++m)
    rewrite(g_cmods[m], "", false, [](const Site& s, uint8_t* b) {
      if (s.orig_exact) memcpy(b, s.orig, 5);
      else site_bytes(s, false, b);
    });
  give_handlers_back();
  ::pthread_mutex_unlock(&g_lock);
}

void code_patch_after_fork() {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;  // a thread that held it does not exist here
  g_lock = fresh;
  if (g_membarrier) ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

}  // namespace callscope::rt

// ---- keeping SIGTRAP ours while patchable entries are in use ---------------------

// A breakpoint byte met with SIGTRAP blocked kills the process, so no thread
// may block it while sites exist: masks lose it. And the program's own
// SIGTRAP handler (a debugger-like tool of its own) goes behind ours: it
// gets every trap that is not ours.
using namespace callscope::rt;

namespace {

using SigmaskFn = int (*)(int, const sigset_t*, sigset_t*);
SigmaskFn g_real_sigmask = nullptr;
SigmaskFn g_real_procmask = nullptr;

// `real` with `set` less SIGTRAP while sites exist (SIG_UNBLOCK as it is).
CALLSCOPE_NOINSTR int mask_keeping_trap(SigmaskFn real, int how, const sigset_t* set, sigset_t* old) {
  if (!g_handler || !set || how == SIG_UNBLOCK || !sigismember(set, SIGTRAP)) return real(how, set, old);
  sigset_t copy = *set;
  sigdelset(&copy, SIGTRAP);
  return real(how, &copy, old);
}

}  // namespace

CALLSCOPE_EXPORT int pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  SigmaskFn real = next_symbol(&g_real_sigmask, "pthread_sigmask");
  return real ? mask_keeping_trap(real, how, set, old) : EINVAL;
}

CALLSCOPE_EXPORT int sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  SigmaskFn real = next_symbol(&g_real_procmask, "sigprocmask");
  if (!real) {
    errno = EINVAL;
    return -1;
  }
  return mask_keeping_trap(real, how, set, old);
}

CALLSCOPE_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  SigactionFn real = real_sigaction();
  if (!real) {
    errno = EINVAL;
    return -1;
  }
  if (g_handler && sig == SIGTRAP) {  // ours stays; theirs is called for traps not ours
    if (old) *old = g_old_trap;
    if (act) g_old_trap = *act;
    return 0;
  }
  if (g_handler && act && sigismember(&act->sa_mask, SIGTRAP)) {
    struct sigaction copy = *act;
    sigdelset(&copy.sa_mask, SIGTRAP);
    return real(sig, &copy, old);
  }
  return real(sig, act, old);
}
