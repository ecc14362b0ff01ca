// Which processes the runtime traces (`record --follow`, CALLSCOPE_FOLLOW).
//
// `record` preloads the runtime into the program and, through LD_PRELOAD,
// into every program it starts: a build's thousand compilers, the shells
// between. Setting a process up (the session's process directory, the meta
// file, the module map, the ELF files read for patchable entries, the
// control socket and its thread) costs about a millisecond; a process that
// has nothing to record must not pay it, nor appear in the trace as a
// process of 0 calls. So at our constructor (process.cpp) each process
// image decides, before anything is made:
//  - all: traced, every one (the behaviour before --follow);
//  - hooked (the default): traced when something in it calls the runtime:
//    a loaded module imports a hook (__cyg_profile_func_enter/exit, mcount,
//    _mcount, __fentry__) or the public API (callscope_*), or holds
//    patchable entries or -mnop-mcount sites (__patchable_function_entries,
//    __mcount_loc), or the settings hook something in every process
//    (--libcalls, --patch-*, --memory). Otherwise it stays dormant: the
//    runtime stays loaded (LD_PRELOAD still reaches the programs it starts)
//    and does nothing, until a hook is called after all (its first call sets
//    the process up, as an instrumented library's constructor always could)
//    or a library with hooks is loaded (the dlopen wrapper looks at the new
//    modules);
//  - none: only the process `record` started (CALLSCOPE_ROOT_PID, through
//    its execs) is traced; every other one is off for good.
// The process `record` started is traced whatever it holds (record says when
// it has no hooks), and so is an attached one (attach.cpp).
//
// Fork children are their parent's image: under hooked one is traced when
// its parent has hooks (a `make` that `record` started, traced as the first
// process, forks children that are not), under none never (they become
// inert: their parent's files are not theirs to write).
//
// A process that is not traced tells `record` it ran, so that the trace's
// summary can count it: one line "PID NAME" appended to the session's file
// `untraced-processes` (a dormant process that is set up later appends
// "PID -", which takes its line back). One open, one write, one close.
//
// What deciding costs: the dynamic symbols of each loaded module that the
// hash table leaves out (its undefined ones, usually a few hundred), read
// where the dynamic linker mapped them, and per module an open and two
// preads of its section headers and their names (patchable entries are
// found by section only). /bin/true: two modules, about 10 system calls.
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/module_bounds.h"
#include "runtime/path_buf.h"
#include "runtime/runtime.h"

namespace callscope::rt {

namespace {

// Modules looked at already (a dlopen looks at the new ones only).
struct SeenModule {
  uint64_t bias;
  uint64_t low;
  bool listed;  // by the current pass (one unloaded since is forgotten: another may load there)
};
constexpr int kMaxSeen = 1024;
SeenModule g_seen[kMaxSeen];
int g_seen_count = 0;
pthread_mutex_t g_seen_lock = PTHREAD_MUTEX_INITIALIZER;
bool g_has_hooks = false;  // sticky: something in this image calls the runtime
int g_counted_pid = 0;     // the process that wrote this image's line to untraced-processes

CALLSCOPE_NOINSTR bool is_hook_name(const char* n) {
  if (strncmp(n, "callscope_", 10) == 0) return true;
  return strcmp(n, "__cyg_profile_func_enter") == 0 || strcmp(n, "__cyg_profile_func_exit") == 0 ||
         strcmp(n, "mcount") == 0 || strcmp(n, "_mcount") == 0 || strcmp(n, "__fentry__") == 0;
}

CALLSCOPE_NOINSTR uint64_t dyn_addr(const dl_phdr_info* info, uint64_t v) {
  // glibc relocates the dynamic section's addresses in place on x86-64;
  // where it did not (the vDSO), they are still relative.
  return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

// Whether the module's dynamic symbols hold an undefined reference to a
// hook or to the API. With a GNU hash table, the symbols it leaves out come
// first (below symoffset): the undefined ones are among them, and only they
// are read. With a SysV table, all of them.
CALLSCOPE_NOINSTR bool imports_a_hook(const dl_phdr_info* info) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return false;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  uint64_t strsz = 0;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_STRSZ: strsz = d->d_un.d_val; break;
      case DT_GNU_HASH: gnu_hash = reinterpret_cast<const uint32_t*>(dyn_addr(info, d->d_un.d_ptr)); break;
      case DT_HASH: sysv_hash = reinterpret_cast<const uint32_t*>(dyn_addr(info, d->d_un.d_ptr)); break;
      default: break;
    }
  }
  if (!symtab || !strtab) return false;
  uint32_t count = 0;
  if (gnu_hash) count = gnu_hash[1];  // symoffset
  else if (sysv_hash) count = sysv_hash[1];  // nchain: every symbol
  for (uint32_t i = 1; i < count; ++i) {
    const ElfW(Sym)& s = symtab[i];
    if (s.st_shndx != SHN_UNDEF || s.st_name >= strsz) continue;
    if (is_hook_name(strtab + s.st_name)) return true;
  }
  return false;
}

// Section headers and their names, read from the module's file.
constexpr unsigned kMaxSections = 1024;
Elf64_Shdr g_sh[kMaxSections];
char g_names[64 << 10];

CALLSCOPE_NOINSTR bool pread_all(int fd, void* buf, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, n - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// Whether the module's file has a section of patchable entries or of
// -mnop-mcount sites: its section headers are not mapped, so they are read
// (the ELF header is, in the first segment, when that maps the file's
// start).
CALLSCOPE_NOINSTR bool has_entry_sections(const dl_phdr_info* info) {
  const bool main = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  const int fd = ::open(main ? "/proc/self/exe" : info->dlpi_name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr eh;
  bool have = false;
  for (int i = 0; i < info->dlpi_phnum && !have; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && ph.p_offset == 0 && ph.p_filesz >= sizeof eh) {
      memcpy(&eh, reinterpret_cast<const void*>(info->dlpi_addr + ph.p_vaddr), sizeof eh);
      have = true;
    }
  }
  if (!have) have = pread_all(fd, &eh, sizeof eh, 0);
  bool found = false;
  if (have && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_shoff != 0 &&
      eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shstrndx < eh.e_shnum) {
    const unsigned n = eh.e_shnum < kMaxSections ? eh.e_shnum : kMaxSections;
    if (eh.e_shstrndx < n && pread_all(fd, g_sh, n * sizeof(Elf64_Shdr), eh.e_shoff)) {
      const Elf64_Shdr& names = g_sh[eh.e_shstrndx];
      const uint64_t size = names.sh_size < sizeof g_names ? names.sh_size : sizeof g_names - 1;
      if (pread_all(fd, g_names, size, names.sh_offset)) {
        g_names[size] = '\0';
        for (unsigned i = 0; i < n && !found; ++i) {
          if (!(g_sh[i].sh_flags & SHF_ALLOC) || g_sh[i].sh_name >= size) continue;
          const char* name = g_names + g_sh[i].sh_name;
          found = strcmp(name, "__patchable_function_entries") == 0 || strcmp(name, "__mcount_loc") == 0;
        }
      }
    }
  }
  ::close(fd);
  return found;
}

CALLSCOPE_NOINSTR int look_at_module(dl_phdr_info* info, size_t, void* arg) {
  const ModuleBounds b = module_bounds(info);
  if (b.high == 0) return 0;
  for (int i = 0; i < g_seen_count; ++i)
    if (g_seen[i].bias == info->dlpi_addr && g_seen[i].low == b.low) {
      g_seen[i].listed = true;
      return 0;
    }
  if (runtime_or_system_module(info, b, reinterpret_cast<const void*>(&look_at_module))) return 0;
  // (A module another thread is still relocating is read all the same: its
  // dynamic symbols are not relocated, and its sections come from its file.)
  if (imports_a_hook(info) || has_entry_sections(info)) {
    *static_cast<bool*>(arg) = true;
    return 1;  // enough: the process is traced
  }
  if (g_seen_count < kMaxSeen) g_seen[g_seen_count++] = SeenModule{info->dlpi_addr, b.low, true};
  return 0;
}

CALLSCOPE_NOINSTR bool set_in(const char* name) {
  const char* v = setting(name);
  return v && v[0] && strcmp(v, "0") != 0;
}

CALLSCOPE_NOINSTR FollowMode follow_mode() {
  if (g_attached) return FollowMode::kAll;  // attach's fork children are followed as ever
  const char* f = setting("CALLSCOPE_FOLLOW");
  if (f && strcmp(f, "all") == 0) return FollowMode::kAll;
  if (f && strcmp(f, "none") == 0) return FollowMode::kNone;
  return FollowMode::kHooked;
}

// Appends `text` to the session's untraced-processes; nothing without a
// session given by `record`.
CALLSCOPE_NOINSTR void append_untraced(const char* text, size_t len) {
  const char* dir = setting("CALLSCOPE_DIR");
  if (!dir || !dir[0]) return;
  PathBuf path;
  path.add(dir).add("/untraced-processes");
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t ignored = ::write(fd, text, len);  // one write on O_APPEND: lines never interleave
  (void)ignored;
  ::close(fd);
}

}  // namespace

bool process_has_hooks() {
  const int saved_errno = errno;
  ::pthread_mutex_lock(&g_seen_lock);
  // Only --follow hooked asks (all and none decide without looking).
  if (!__atomic_load_n(&g_has_hooks, __ATOMIC_ACQUIRE) && follow_mode() == FollowMode::kHooked) {
    bool found = false;
    for (int i = 0; i < g_seen_count; ++i) g_seen[i].listed = false;
    ::dl_iterate_phdr(look_at_module, &found);
    if (found) {
      __atomic_store_n(&g_has_hooks, true, __ATOMIC_RELEASE);
    } else {
      int kept = 0;
      for (int i = 0; i < g_seen_count; ++i)
        if (g_seen[i].listed) g_seen[kept++] = g_seen[i];
      g_seen_count = kept;
    }
  }
  ::pthread_mutex_unlock(&g_seen_lock);
  errno = saved_errno;
  return __atomic_load_n(&g_has_hooks, __ATOMIC_ACQUIRE);
}

void note_has_hooks() { __atomic_store_n(&g_has_hooks, true, __ATOMIC_RELEASE); }

bool follow_root() {
  const char* root = setting("CALLSCOPE_ROOT_PID");
  return root && ::atoi(root) == ::getpid();
}

FollowDecision follow_decision() {
  const FollowMode mode = follow_mode();
  const bool root = follow_root();
  // Settings that hook something in every process.
  if (set_in("CALLSCOPE_LIBCALLS") || set_in("CALLSCOPE_PATCH_IMPORTS") || set_in("CALLSCOPE_PATCH_CALLERS") ||
      set_in("CALLSCOPE_MEMORY"))
    note_has_hooks();
  if (mode == FollowMode::kAll) return FollowDecision::kTrace;
  if (root) {
    // Looked at now all the same: its fork children are traced only if it has hooks.
    if (mode == FollowMode::kHooked) process_has_hooks();
    return FollowDecision::kTrace;
  }
  if (mode == FollowMode::kNone) return FollowDecision::kNever;
  return process_has_hooks() ? FollowDecision::kTrace : FollowDecision::kLater;
}

bool follow_fork_child() {
  switch (follow_mode()) {
    case FollowMode::kAll: return true;
    case FollowMode::kNone: return false;
    case FollowMode::kHooked: break;
  }
  return __atomic_load_n(&g_has_hooks, __ATOMIC_ACQUIRE);
}

bool follow_dormant_dlopen() { return follow_mode() == FollowMode::kHooked && process_has_hooks(); }

void note_untraced_process(bool taken_back) {
  const int pid = ::getpid();
  if (taken_back && g_counted_pid != pid) return;  // a fork child of a dormant process: it wrote none
  PathBuf line;
  line.add_uint(static_cast<uint64_t>(pid)).add(" ");
  if (taken_back) {
    line.add("-");
  } else {
    // Its name (argv[0]'s last part, set by libc before any constructor of
    // ours), on one line.
    char name[64];
    size_t n = 0;
    for (const char* p = program_invocation_short_name; p && *p && n + 1 < sizeof name; ++p)
      name[n++] = (*p == '\n' || *p == '\r' || *p == '\t') ? '?' : *p;
    name[n] = '\0';
    line.add(n ? name : "?");
    g_counted_pid = pid;
  }
  line.add("\n");
  append_untraced(line.c_str(), line.size());
  if (taken_back) g_counted_pid = 0;
}

}  // namespace callscope::rt
