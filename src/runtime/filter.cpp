#include "runtime/filter.h"

#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/heap_sort.h"
#include "runtime/runtime.h"

namespace callscope::rt {

uint64_t* g_filter_cache = nullptr;
bool g_filter_skipping = false;

namespace {

char g_storage[65536];
size_t g_used = 0;
GlobList g_include, g_exclude, g_include_mod, g_exclude_mod, g_chrono;

// ---- symbol tables ------------------------------------------------------------

struct Sym {
  uint64_t addr;  // ELF virtual address
  uint64_t size;
  uint32_t name;  // offset in the module's string table
  uint32_t pad;
};

struct Module {
  uint64_t bias;
  char path[512];
  const char* strtab;  // in the file mapping
  Sym* syms;
  uint64_t n;
  bool loaded;
};
constexpr int kMaxModules = 512;
Module g_modules[kMaxModules];
int g_module_count = 0;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

// Reads the function symbols of m.path (mapped for the life of the process).
CALLSCOPE_NOINSTR void load_module(Module& m) {
  m.loaded = true;
  const int fd = ::open(m.path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    ::close(fd);
    return;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return;
  const auto* base = static_cast<const char*>(map);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shoff == 0 || eh->e_shoff + uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) > size)
    return;
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  const Elf64_Shdr* symtab = nullptr;
  for (int pass = 0; pass < 2 && !symtab; ++pass)
    for (unsigned i = 0; i < eh->e_shnum; ++i)
      if (sh[i].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM)) symtab = &sh[i];
  if (!symtab || symtab->sh_link >= eh->e_shnum || symtab->sh_offset + symtab->sh_size > size) return;
  const Elf64_Shdr& strsec = sh[symtab->sh_link];
  if (strsec.sh_offset + strsec.sh_size > size) return;
  const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + symtab->sh_offset);
  const uint64_t count = symtab->sh_size / sizeof(Elf64_Sym);
  uint64_t n = 0;
  for (uint64_t i = 0; i < count; ++i)
    if ((ELF64_ST_TYPE(syms[i].st_info) == STT_FUNC || ELF64_ST_TYPE(syms[i].st_info) == STT_GNU_IFUNC) &&
        syms[i].st_shndx != SHN_UNDEF && syms[i].st_name < strsec.sh_size)
      ++n;
  if (n == 0) return;
  void* arr = ::mmap(nullptr, n * sizeof(Sym), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (arr == MAP_FAILED) return;
  Sym* out = static_cast<Sym*>(arr);
  uint64_t k = 0;
  for (uint64_t i = 0; i < count && k < n; ++i)
    if ((ELF64_ST_TYPE(syms[i].st_info) == STT_FUNC || ELF64_ST_TYPE(syms[i].st_info) == STT_GNU_IFUNC) &&
        syms[i].st_shndx != SHN_UNDEF && syms[i].st_name < strsec.sh_size)
      out[k++] = Sym{syms[i].st_value, syms[i].st_size, syms[i].st_name, 0};
  heap_sort(out, k, [](const Sym& x, const Sym& y) { return x.addr < y.addr; });
  m.strtab = base + strsec.sh_offset;
  m.syms = out;
  m.n = k;
}

CALLSCOPE_NOINSTR const char* symbol_name(const Module& m, uint64_t vaddr) {
  uint64_t lo = 0, hi = m.n;  // first symbol with addr > vaddr
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (m.syms[mid].addr <= vaddr) lo = mid + 1;
    else hi = mid;
  }
  for (uint64_t i = lo; i-- > 0;) {
    const Sym& s = m.syms[i];
    if (vaddr < s.addr + (s.size ? s.size : 1)) return m.strtab + s.name;
    if (s.addr < vaddr && lo - i > 8) break;  // aliases share an address; stop looking far below
  }
  return nullptr;
}

CALLSCOPE_NOINSTR Module* module_of(uint64_t fn) {
  Dl_info info;
  link_map* lm = nullptr;
  if (::dladdr1(reinterpret_cast<void*>(fn), &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0 || !lm)
    return nullptr;
  const char* name = lm->l_name;
  for (int i = 0; i < g_module_count; ++i)
    if (g_modules[i].bias == lm->l_addr &&
        (name && name[0] ? strcmp(g_modules[i].path, name) == 0 : g_modules[i].path[0] == '/'))
      return &g_modules[i];
  if (g_module_count == kMaxModules) return nullptr;
  Module& m = g_modules[g_module_count++];
  m.bias = lm->l_addr;
  if (name && name[0]) {
    strncpy(m.path, name, sizeof m.path - 1);
  } else {
    const ssize_t r = ::readlink("/proc/self/exe", m.path, sizeof m.path - 1);
    m.path[r > 0 ? r : 0] = '\0';
  }
  load_module(m);
  return &m;
}

using Demangle = char* (*)(const char*, char*, size_t*, int*);

// fn -> flags (filter.h, g_filter_cache); two threads deciding the same
// function only redo work.
constexpr uint64_t kAddrMask = (uint64_t{1} << 48) - 1;
bool g_active = false;

CALLSCOPE_NOINSTR uint32_t decide(uint64_t fn) {
  ::pthread_mutex_lock(&g_lock);
  Module* m = module_of(fn);
  const char* path = m ? m->path : "";
  bool excluded = false;
  if (g_include_mod.n && !module_matches(g_include_mod, path)) excluded = true;
  if (module_matches(g_exclude_mod, path)) excluded = true;
  const char* mangled = m && m->syms ? symbol_name(*m, fn - m->bias) : nullptr;
  ::pthread_mutex_unlock(&g_lock);
  char* demangled = nullptr;
  if (mangled && mangled[0] == '_' && mangled[1] == 'Z') {
    static Demangle demangle = reinterpret_cast<Demangle>(::dlsym(RTLD_DEFAULT, "__cxa_demangle"));
    int status = 0;
    if (demangle) demangled = demangle(mangled, nullptr, nullptr, &status);
  }
  const char* name = demangled ? demangled : mangled;
  auto matches = [&](const GlobList& l) { return any_glob_matches(l, name) || (demangled && any_glob_matches(l, mangled)); };
  if (g_include.n && !matches(g_include)) excluded = true;
  if (matches(g_exclude)) excluded = true;
  uint32_t flags = excluded ? fmt::kProfNodeExcluded : 0;
  if (matches(g_chrono)) flags |= fmt::kProfNodeChrono;
  ::free(demangled);
  return flags;
}

}  // namespace

void read_glob_list(const char* var, GlobList& list) {
  const char* v = setting(var);
  if (!v) return;
  while (*v) {
    const char* end = strchr(v, ',');
    size_t len = end ? static_cast<size_t>(end - v) : strlen(v);
    while (len && *v == ' ') ++v, --len;
    while (len && v[len - 1] == ' ') --len;
    if (len && list.n < kMaxGlobs && g_used + len + 1 <= sizeof g_storage) {
      memcpy(g_storage + g_used, v, len);
      g_storage[g_used + len] = '\0';
      list.globs[list.n++] = g_storage + g_used;
      g_used += len + 1;
    }
    if (!end) break;
    v = end + 1;
  }
}

bool any_glob_matches(const GlobList& l, const char* name) {
  for (int i = 0; i < l.n; ++i)
    if (name && ::fnmatch(l.globs[i], name, 0) == 0) return true;
  return false;
}

bool module_matches(const GlobList& l, const char* path) {
  const char* base = strrchr(path, '/');
  return any_glob_matches(l, base ? base + 1 : path) || any_glob_matches(l, path);
}

void filter_configure() {
  read_glob_list("CALLSCOPE_INCLUDE", g_include);
  read_glob_list("CALLSCOPE_EXCLUDE", g_exclude);
  read_glob_list("CALLSCOPE_INCLUDE_MODULES", g_include_mod);
  read_glob_list("CALLSCOPE_EXCLUDE_MODULES", g_exclude_mod);
  read_glob_list("CALLSCOPE_CHRONO", g_chrono);
  g_active = g_include.n || g_exclude.n || g_include_mod.n || g_exclude_mod.n || g_chrono.n;
  if (g_active) {
    void* c = ::mmap(nullptr, kFilterCacheSlots * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    g_filter_cache = c == MAP_FAILED ? nullptr : static_cast<uint64_t*>(c);
  }
  g_filter_skipping = g_filter_cache && (g_include.n || g_exclude.n || g_include_mod.n || g_exclude_mod.n);
}

bool filter_active() { return g_active; }
bool filter_has_chrono() { return g_chrono.n != 0; }

uint32_t filter_flags(uint64_t fn) {
  if (!g_active) return 0;
  uint32_t i = filter_slot(fn);
  uint32_t probe = 0;
  if (g_filter_cache) {
    for (; probe < 16; ++probe, i = (i + 1) & (kFilterCacheSlots - 1)) {
      const uint64_t k = __atomic_load_n(&g_filter_cache[i], __ATOMIC_ACQUIRE);
      if ((k & kAddrMask) == (fn & kAddrMask) && k) return static_cast<uint32_t>(k >> 48) - 1;
      if (k == 0) break;
    }
  }
  const int saved_errno = errno;
  const uint32_t flags = decide(fn);
  errno = saved_errno;
  if (g_filter_cache && probe < 16) {
    uint64_t expected = 0;
    __atomic_compare_exchange_n(&g_filter_cache[i], &expected, (fn & kAddrMask) | (uint64_t{flags} + 1) << 48, false,
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  }
  return flags;
}

}  // namespace callscope::rt
