// Which GOT slots are hooked, and how (patch.h).
//
// A module's calls into other modules go through its GOT: JUMP_SLOT
// relocations (calls through the PLT, lazily bound or not) and GLOB_DAT ones
// of function symbols (-fno-plt calls, and the addresses of functions taken
// across modules). Each slot chosen gets a stub of its own, and the slot the
// stub's address. Chosen, per CALLSCOPE_* variable:
//   CALLSCOPE_LIBCALLS=1          the executable's slots (its calls into libraries)
//   CALLSCOPE_PATCH_IMPORTS=GLOBS every slot of the modules named
//   CALLSCOPE_PATCH_CALLERS=GLOBS every slot, in any module, bound to a function of the modules named
// Never hooked: the slots of the runtime, the dynamic linker and the vDSO;
// calls into those; and functions that return twice or read their own
// return address (never_hooked.h).
//
// The target is what the slot holds: `record --libcalls` runs the program
// with LD_BIND_NOW=1, so every slot is bound at load (with lazy binding, the
// first call would bind the slot again, over our stub); a slot still lazy is
// bound here with dlsym. What the trace records for a call is the address of
// the function's symbol in the module that defines it: for an IFUNC
// (strlen), the symbol, not the implementation picked (__strlen_avx2, a name
// that stripped libraries do not have).
//
// Slots in RELRO (all of them with -z now) are made writable for the moment
// of the write. A slot is written with one 8-byte store: threads calling
// through it meanwhile go either way.
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "runtime/engine_state.h"
#include "runtime/filter.h"
#include "runtime/module_bounds.h"
#include "runtime/patch/never_hooked.h"
#include "runtime/patch/patch.h"
#include "runtime/runtime.h"

namespace callscope::rt {

Hook* g_hooks = nullptr;  // kMaxHooks, reserved

namespace {

bool g_libcalls = false;
GlobList g_imports, g_callers;
bool g_enabled = false;
bool g_bind_now_env = false;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

// ---- modules -------------------------------------------------------------------

struct Module {
  uint64_t bias, low, high;
  const char* path;  // dlpi_name, or the executable's path
  const ElfW(Dyn)* dynamic;
  const ElfW(Sym)* symtab;
  const char* strtab;
  const uint32_t* gnu_hash;
  const uint32_t* sysv_hash;
  const ElfW(Rela)* jmprel;
  uint64_t jmprel_size;
  const ElfW(Rela)* rela;
  uint64_t rela_size;
  uint64_t relro_lo, relro_hi;
  bool bind_now;
  bool ours;  // the runtime, libcallscope-mem, the dynamic linker, the vDSO: never patched or hooked
  bool main;
};

constexpr int kMaxModules = 4096;
Module g_mods[kMaxModules];
int g_mod_count = 0;
// Modules whose slots were looked at, by (bias, low): not again.
struct Seen {
  uint64_t bias, low;
};
Seen g_seen[kMaxModules];
int g_seen_count = 0;
char g_exe[4096];

// The executable's path in g_exe (the main module's dlpi_name is empty).
CALLSCOPE_NOINSTR void read_exe_path() {
  const ssize_t n = ::readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
  g_exe[n > 0 ? n : 0] = '\0';
}

CALLSCOPE_NOINSTR uint64_t dyn_addr(const dl_phdr_info* info, uint64_t v) {
  // glibc relocates the dynamic section's addresses in place on x86-64;
  // where it did not (the vDSO), they are still relative.
  return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

CALLSCOPE_NOINSTR int collect(dl_phdr_info* info, size_t, void*) {
  if (g_mod_count == kMaxModules) return 1;
  Module m{};
  m.bias = info->dlpi_addr;
  const ModuleBounds bounds = module_bounds(info);
  m.low = bounds.low;
  m.high = bounds.high;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) {
      m.dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
    } else if (ph.p_type == PT_GNU_RELRO) {
      m.relro_lo = info->dlpi_addr + ph.p_vaddr;
      m.relro_hi = m.relro_lo + ph.p_memsz;
    }
  }
  if (m.high == 0) return 0;
  m.main = g_mod_count == 0;
  m.path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : (m.main ? g_exe : "");
  m.ours = runtime_or_system_module(info, bounds, reinterpret_cast<const void*>(&libcalls_configure)) ||
           m.dynamic == nullptr;
  for (const ElfW(Dyn)* d = m.dynamic; d && d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: m.symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_STRTAB: m.strtab = reinterpret_cast<const char*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_GNU_HASH: m.gnu_hash = reinterpret_cast<const uint32_t*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_HASH: m.sysv_hash = reinterpret_cast<const uint32_t*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_JMPREL: m.jmprel = reinterpret_cast<const ElfW(Rela)*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: m.jmprel_size = d->d_un.d_val; break;
      case DT_RELA: m.rela = reinterpret_cast<const ElfW(Rela)*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_RELASZ: m.rela_size = d->d_un.d_val; break;
      case DT_BIND_NOW: m.bind_now = true; break;
      case DT_FLAGS: m.bind_now |= (d->d_un.d_val & DF_BIND_NOW) != 0; break;
      case DT_FLAGS_1: m.bind_now |= (d->d_un.d_val & DF_1_NOW) != 0; break;
      default: break;
    }
  }
  g_mods[g_mod_count++] = m;
  return 0;
}

CALLSCOPE_NOINSTR const Module* module_at(uint64_t addr) {
  for (int i = 0; i < g_mod_count; ++i)
    if (addr >= g_mods[i].low && addr < g_mods[i].high) return &g_mods[i];
  return nullptr;
}

CALLSCOPE_NOINSTR uint32_t gnu_hash_of(const char* s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + static_cast<uint8_t>(*s);
  return h;
}

// The address the trace records for a call of `name` bound to `target` in
// module m: the definition at target if there is one, else (an IFUNC) the
// default version's symbol; target when the name is not found.
CALLSCOPE_NOINSTR uint64_t symbol_address(const Module& m, const char* name, uint64_t target) {
  if (!m.symtab || !m.strtab) return target;
  uint64_t found = 0;
  auto consider = [&](const ElfW(Sym)& s) {
    if (s.st_shndx == SHN_UNDEF || strcmp(m.strtab + s.st_name, name) != 0) return false;
    const uint64_t a = m.bias + s.st_value;
    if (a == target) {
      found = a;
      return true;
    }
    if (ELF64_ST_TYPE(s.st_info) == STT_GNU_IFUNC && found == 0) found = a;
    return false;
  };
  if (m.gnu_hash) {
    const uint32_t nbuckets = m.gnu_hash[0], symoffset = m.gnu_hash[1], bloom_size = m.gnu_hash[2];
    const auto* bloom = reinterpret_cast<const uint64_t*>(m.gnu_hash + 4);
    const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    const uint32_t h = gnu_hash_of(name);
    if (nbuckets == 0) return target;
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; ++i) {
      const uint32_t ch = chain[i - symoffset];
      if ((ch | 1) == (h | 1) && consider(m.symtab[i])) break;
      if (ch & 1) break;
    }
  } else if (m.sysv_hash) {
    const uint32_t nchain = m.sysv_hash[1];
    for (uint32_t i = 0; i < nchain; ++i)
      if (consider(m.symtab[i])) break;
  }
  return found ? found : target;
}

// ---- hooks and their stubs ------------------------------------------------------

// Stubs, 16 bytes each, in chunks of 64 KiB; each chunk begins with a jump
// to callscope_rt_lib_entry (stubs reach it with a 32-bit displacement).
//   endbr64; mov $index, %r11d; jmp chunk_start; nop
constexpr uint64_t kChunkBytes = 64 << 10;
constexpr uint32_t kStubsPerChunk = kChunkBytes / 16 - 1;
constexpr uint32_t kMaxHooks = 1u << 20;
constexpr uint32_t kMaxChunks = kMaxHooks / kStubsPerChunk + 1;
uint32_t g_hook_count = 0;
uint8_t* g_chunks[kMaxChunks];
// (slot, target) -> index + 1, open addressing: a library loaded again at
// the same place gets its stubs back.
constexpr uint32_t kIndexSize = 1u << 16;
struct IndexEntry {
  uint64_t slot, target;
  uint32_t index_plus_1;
};
IndexEntry* g_index = nullptr;

CALLSCOPE_NOINSTR uint8_t* new_chunk() {
  void* m = ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* c = static_cast<uint8_t*>(m);
  const uint64_t entry = reinterpret_cast<uint64_t>(&callscope_rt_lib_entry);
  c[0] = 0xff;  // jmp *0(%rip), then the address
  c[1] = 0x25;
  memset(c + 2, 0, 4);
  memcpy(c + 6, &entry, 8);
  for (uint32_t j = 0; j < kStubsPerChunk; ++j) {
    uint8_t* s = c + 16 + 16 * j;
    static const uint8_t kEndbr[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    memcpy(s, kEndbr, 4);
    const uint32_t index = (g_hook_count / kStubsPerChunk) * kStubsPerChunk + j;
    s[4] = 0x41;  // mov $index, %r11d
    s[5] = 0xbb;
    memcpy(s + 6, &index, 4);
    s[10] = 0xe9;  // jmp rel32 to the chunk's start
    const int32_t rel = -static_cast<int32_t>(16 + 16 * j + 15);
    memcpy(s + 11, &rel, 4);
    s[15] = 0x90;
  }
  if (::mprotect(m, kChunkBytes, PROT_READ | PROT_EXEC) != 0) {
    ::munmap(m, kChunkBytes);
    return nullptr;
  }
  return c;
}

// The stub for (slot, target, fn), made if need be; 0 when none can be.
CALLSCOPE_NOINSTR uint64_t stub_for(uint64_t slot, uint64_t target, uint64_t fn) {
  uint32_t i = static_cast<uint32_t>(((slot ^ (target << 7)) * 0x9E3779B97F4A7C15ull) >> 48) & (kIndexSize - 1);
  for (uint32_t probe = 0; probe < 64; ++probe, i = (i + 1) & (kIndexSize - 1)) {
    IndexEntry& e = g_index[i];
    if (e.index_plus_1 == 0) break;
    if (e.slot == slot && e.target == target && g_hooks[e.index_plus_1 - 1].fn == fn) {
      const uint32_t k = e.index_plus_1 - 1;
      return reinterpret_cast<uint64_t>(g_chunks[k / kStubsPerChunk]) + 16 + 16 * (k % kStubsPerChunk);
    }
  }
  if (g_hook_count == kMaxHooks) return 0;
  const uint32_t k = g_hook_count;
  if (k % kStubsPerChunk == 0 && !(g_chunks[k / kStubsPerChunk] = new_chunk())) return 0;
  g_hooks[k] = Hook{target, fn};
  // Published before any slot points to the stub.
  __atomic_store_n(&g_hook_count, k + 1, __ATOMIC_RELEASE);
  if (g_index[i].index_plus_1 == 0) g_index[i] = IndexEntry{slot, target, k + 1};
  return reinterpret_cast<uint64_t>(g_chunks[k / kStubsPerChunk]) + 16 + 16 * (k % kStubsPerChunk);
}

CALLSCOPE_NOINSTR bool is_stub(uint64_t addr) {
  for (uint32_t c = 0; c < kMaxChunks && g_chunks[c]; ++c)
    if (addr >= reinterpret_cast<uint64_t>(g_chunks[c]) && addr < reinterpret_cast<uint64_t>(g_chunks[c]) + kChunkBytes)
      return true;
  return false;
}

CALLSCOPE_NOINSTR void say(const char* a, const char* b) {
  ssize_t ignored = ::write(2, a, strlen(a));
  ignored = ::write(2, b, strlen(b));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
}

// ---- patching one module ---------------------------------------------------------

struct Pending {
  uint64_t* slot;
  uint64_t seen;  // what the slot held when we read it
  uint64_t stub;
};
constexpr int kMaxPending = 1 << 16;
Pending g_pending[kMaxPending];

CALLSCOPE_NOINSTR void consider_relocs(const Module& m, const ElfW(Rela)* rel, uint64_t bytes, bool all_slots,
                                       int* pending) {
  if (!rel || !m.symtab || !m.strtab) return;
  const uint64_t n = bytes / sizeof(ElfW(Rela));
  for (uint64_t i = 0; i < n && *pending < kMaxPending; ++i) {
    const uint32_t type = ELF64_R_TYPE(rel[i].r_info);
    if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
    const ElfW(Sym)& sym = m.symtab[ELF64_R_SYM(rel[i].r_info)];
    const uint32_t st = ELF64_ST_TYPE(sym.st_info);
    if (type == R_X86_64_GLOB_DAT && st != STT_FUNC && st != STT_GNU_IFUNC) continue;  // data
    const char* name = m.strtab + sym.st_name;
    if (!name[0] || never_hooked(name)) continue;
    auto* slot = reinterpret_cast<uint64_t*>(m.bias + rel[i].r_offset);
    uint64_t target = *slot;
    if (target == 0 || is_stub(target)) continue;
    const Module* def = module_at(target);
    if (def == &m && type == R_X86_64_JUMP_SLOT && !m.bind_now && !g_bind_now_env) {
      // Not bound yet: its PLT entry. Bind it as the dynamic linker would
      // for the global scope.
      target = reinterpret_cast<uint64_t>(::dlsym(RTLD_DEFAULT, name));
      if (target == 0) continue;
      def = module_at(target);
    }
    if (!def || def->ours) continue;
    if (!all_slots && !module_matches(g_callers, def->path)) continue;
    const uint64_t stub = stub_for(reinterpret_cast<uint64_t>(slot), target, symbol_address(*def, name, target));
    if (stub == 0) return;
    g_pending[(*pending)++] = Pending{slot, *slot, stub};
  }
}

// ---- attach: the program's slots bound to the runtime's exports -------------------

CALLSCOPE_NOINSTR bool write_slots(const Module& m, int pending, bool* done);

// Loaded by attach, the runtime is in no lookup scope of the program's:
// nothing binds to its wrappers and hooks unless we write them into the
// slots. Their addresses come from our own handle (bind_exports): a
// reference of ours by name would bind to the program's definition.
struct Export {
  const char* name;
  uint64_t addr;
  bool unwinding;  // _Unwind_*, __cxa_begin_catch, pthread_exit (got_detach)
};
Export g_exports[24];
int g_export_count = 0;
bool g_binding = false;
// Under attach, every slot written (bound to an export, or hooked): what
// it held, to give it back at detach.
struct Bound {
  uint64_t* slot;
  uint64_t was;
  uint64_t ours;
  bool unwinding;  // an entry of the unwinder's (see got_detach)
};
constexpr int kMaxBound = 1 << 16;
Bound* g_bound = nullptr;
int g_bound_count = 0;
bool g_done[kMaxPending];

CALLSCOPE_NOINSTR void remember_written(int pending) {
  if (!g_bound) return;
  for (int i = 0; i < pending && g_bound_count < kMaxBound; ++i)
    if (g_done[i]) g_bound[g_bound_count++] = Bound{g_pending[i].slot, g_pending[i].seen, g_pending[i].stub, false};
}

CALLSCOPE_NOINSTR uint64_t export_of(const char* name) {
  for (int i = 0; i < g_export_count; ++i)
    if (strcmp(g_exports[i].name, name) == 0) return g_exports[i].addr;
  return 0;
}

CALLSCOPE_NOINSTR void bind_module(const Module& m) {
  if (!m.symtab || !m.strtab) return;
  int pending = 0;
  for (int part = 0; part < 2; ++part) {
    const ElfW(Rela)* rel = part ? m.rela : m.jmprel;
    const uint64_t n = (part ? m.rela_size : m.jmprel_size) / sizeof(ElfW(Rela));
    for (uint64_t i = 0; rel && i < n && pending < kMaxPending; ++i) {
      const uint32_t type = ELF64_R_TYPE(rel[i].r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      const ElfW(Sym)& sym = m.symtab[ELF64_R_SYM(rel[i].r_info)];
      const uint64_t ours = sym.st_name ? export_of(m.strtab + sym.st_name) : 0;
      if (!ours) continue;
      auto* slot = reinterpret_cast<uint64_t*>(m.bias + rel[i].r_offset);
      const uint64_t was = *slot;
      if (was == ours) continue;
      g_pending[pending++] = Pending{slot, was, ours};
    }
  }
  if (pending == 0) return;
  if (g_bound && g_bound_count + pending > kMaxBound) return;  // could not be given back: not written
  if (!write_slots(m, pending, g_done)) {
    if (errno != ENOMEM) say("callscope: cannot bind the runtime's hooks in ", m.path[0] ? m.path : "the program");
    return;
  }
  remember_written(pending);
}

// Writes g_pending[0, pending) into module m's slots, each only if it
// still holds what we read (a slot written since, by the dynamic linker or
// the program, is left to them); `done[i]` says which were written. RELRO
// is made writable for the moment of the writes. False when it could not be.
CALLSCOPE_NOINSTR bool write_slots(const Module& m, int pending, bool* done) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // As the dynamic linker protects it: the last page, if partly RELRO, stays writable.
  const uint64_t lo = m.relro_lo & ~(page - 1), hi = m.relro_hi & ~(page - 1);
  const bool relro = hi > lo;
  if (relro && ::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) != 0) return false;
  for (int i = 0; i < pending; ++i) {
    uint64_t expected = g_pending[i].seen;
    const bool w = __atomic_compare_exchange_n(g_pending[i].slot, &expected, g_pending[i].stub, false,
                                               __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    if (done) done[i] = w;
  }
  if (relro) ::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ);
  return true;
}

CALLSCOPE_NOINSTR void patch_module(const Module& m) {
  // The executable: its file name, or a.out as in D probes.
  const bool all_slots =
      (g_libcalls && m.main) || module_matches(g_imports, m.path) || (m.main && any_glob_matches(g_imports, "a.out"));
  if (!all_slots && g_callers.n == 0) return;
  int pending = 0;
  consider_relocs(m, m.jmprel, m.jmprel_size, all_slots, &pending);
  consider_relocs(m, m.rela, m.rela_size, all_slots, &pending);
  if (pending == 0) return;
  if (g_bound && g_bound_count + pending > kMaxBound) return;  // could not be given back at a detach: not hooked
  if (!write_slots(m, pending, g_done)) {
    if (errno != ENOMEM)  // ENOMEM: unloaded meanwhile
      say("callscope: cannot hook the library calls of ", m.path[0] ? m.path : "the program");
    return;
  }
  const int first = g_bound_count;
  remember_written(pending);
  for (int i = first; i < g_bound_count; ++i)
    for (int k = 0; k < g_export_count; ++k)
      if (g_exports[k].addr == g_bound[i].ours) g_bound[i].unwinding = g_exports[k].unwinding;
}

// Puts `value` back into a slot that holds `expect`, if the slot is still
// in a loaded module (g_mods, collected by the caller).
CALLSCOPE_NOINSTR void give_back(uint64_t* slot, uint64_t expect, uint64_t value) {
  const Module* m = module_at(reinterpret_cast<uint64_t>(slot));
  if (!m) return;
  g_pending[0] = Pending{slot, expect, value};
  write_slots(*m, 1, nullptr);
}

}  // namespace

bool libcalls_configure() {
  g_libcalls = env_true("CALLSCOPE_LIBCALLS");
  read_glob_list("CALLSCOPE_PATCH_IMPORTS", g_imports);
  read_glob_list("CALLSCOPE_PATCH_CALLERS", g_callers);
  if (!g_libcalls && g_imports.n == 0 && g_callers.n == 0) return false;
  const char* bn = setting("LD_BIND_NOW");
  g_bind_now_env = bn && bn[0];
  g_hooks = static_cast<Hook*>(map_anon(uint64_t{kMaxHooks} * sizeof(Hook)));
  g_index = static_cast<IndexEntry*>(map_anon(uint64_t{kIndexSize} * sizeof(IndexEntry)));
  if (!g_hooks || !g_index) return false;
  read_exe_path();
  g_enabled = true;
  return true;
}

void libcalls_after_fork() {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_lock = fresh;
}

void libcalls_patch_new_modules() {
  if (!g_enabled && !g_binding) return;
  const int saved_errno = errno;
  ThreadState* t = current_thread();
  const uint8_t was_in_hook = t->in_hook;
  t->in_hook = 1;  // our own calls (dlsym, mmap) are not the program's
  signal_fence();
  ::pthread_mutex_lock(&g_lock);
  g_mod_count = 0;
  ::dl_iterate_phdr(collect, nullptr);
  for (int i = 0; i < g_mod_count; ++i) {
    const Module& m = g_mods[i];
    bool seen = false;
    for (int k = 0; k < g_seen_count && !seen; ++k) seen = g_seen[k].bias == m.bias && g_seen[k].low == m.low;
    if (seen || (!m.ours && relro_writable(m.relro_lo, m.relro_hi))) continue;  // relocating: a later pass
    if (g_seen_count < kMaxModules) g_seen[g_seen_count++] = Seen{m.bias, m.low};
    if (m.ours) continue;
    if (g_binding) bind_module(m);  // first: hooks never take a slot of ours for a library call
    if (g_enabled) patch_module(m);
  }
  // Modules gone (dlclose) are forgotten: one loaded there later is new.
  int kept = 0;
  for (int k = 0; k < g_seen_count; ++k) {
    bool loaded = false;
    for (int i = 0; i < g_mod_count && !loaded; ++i) loaded = g_seen[k].bias == g_mods[i].bias && g_seen[k].low == g_mods[i].low;
    if (loaded) g_seen[kept++] = g_seen[k];
  }
  g_seen_count = kept;
  ::pthread_mutex_unlock(&g_lock);
  signal_fence();
  t->in_hook = was_in_hook;
  errno = saved_errno;
}

void bind_exports() {
  // Every export a module of the program may call or take the address of,
  // as our own handle finds them: a reference of ours to the name would
  // bind to the program's (libc's mcount, dlopen, ...), which come first.
  static const char* const kNames[] = {
      "__cyg_profile_func_enter", "__cyg_profile_func_exit", "__fentry__", "mcount", "_mcount", "dlopen", "dlclose",
      "_exit", "_Exit", "pthread_setname_np", "prctl", "_Unwind_RaiseException", "_Unwind_Resume_or_Rethrow",
      "_Unwind_Resume", "__cxa_begin_catch", "pthread_exit", "pthread_sigmask", "sigprocmask", "sigaction"};
  static_assert(sizeof kNames / sizeof kNames[0] <= sizeof g_exports / sizeof g_exports[0]);
  Dl_info info{};
  if (!::dladdr(reinterpret_cast<const void*>(&bind_exports), &info) || !info.dli_fname) return;
  void* self = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!self) return;
  g_export_count = 0;
  for (const char* name : kNames)
    if (void* f = ::dlsym(self, name))
      g_exports[g_export_count++] = Export{name, reinterpret_cast<uint64_t>(f),
                                           strncmp(name, "_Unwind_", 8) == 0 || strcmp(name, "__cxa_begin_catch") == 0 ||
                                               strcmp(name, "pthread_exit") == 0};
  ::dlclose(self);
  g_bound = static_cast<Bound*>(map_anon(uint64_t{kMaxBound} * sizeof(Bound)));
  if (!g_bound) return;
  read_exe_path();  // for messages, also without --libcalls
  g_binding = true;
  libcalls_patch_new_modules();
}

void got_detach() {
  ::pthread_mutex_lock(&g_lock);
  g_binding = false;
  g_enabled = false;
  g_mod_count = 0;
  ::dl_iterate_phdr(collect, nullptr);
  // Last written, first given back: a slot written twice (bound, then its
  // library reloaded) ends with what it held before the first.
  const bool keep_unwinding = __atomic_load_n(&g_returns_replaced, __ATOMIC_RELAXED);
  for (int i = g_bound_count; i-- > 0;)
    if (!(keep_unwinding && g_bound[i].unwinding)) give_back(g_bound[i].slot, g_bound[i].ours, g_bound[i].was);
  g_bound_count = 0;
  ::pthread_mutex_unlock(&g_lock);
}

}  // namespace callscope::rt
