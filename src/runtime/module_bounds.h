// Where a loaded module lies, from its program headers (dl_iterate_phdr):
// what the module map, the GOT hooks and the code patching all need.
#pragma once

#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

namespace callscope::rt {

struct ModuleBounds {
  uint64_t low = ~uint64_t{0}, high = 0;  // its PT_LOAD segments; high 0: none
  uint64_t text_lo = 0, text_hi = 0;      // its first executable segment, page-aligned (4 KiB)
};

__attribute__((no_instrument_function)) inline ModuleBounds module_bounds(const dl_phdr_info* info) {
  ModuleBounds b;
  constexpr uint64_t kPage = 4096;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uint64_t lo = info->dlpi_addr + ph.p_vaddr;
    if (lo < b.low) b.low = lo;
    if (lo + ph.p_memsz > b.high) b.high = lo + ph.p_memsz;
    if ((ph.p_flags & PF_X) && b.text_hi == 0) {
      b.text_lo = lo & ~(kPage - 1);
      b.text_hi = (lo + ph.p_memsz + kPage - 1) & ~(kPage - 1);
    }
  }
  return b;
}

// Whether a module is one that is never patched nor hooked: the runtime
// itself (it holds `self`, an address of its code) and libcallscope-mem, the
// dynamic linker, the vDSO.
__attribute__((no_instrument_function)) inline bool runtime_or_system_module(const dl_phdr_info* info,
                                                                             const ModuleBounds& b, const void* self) {
  const uint64_t vdso = ::getauxval(AT_SYSINFO_EHDR);
  const uint64_t own = reinterpret_cast<uint64_t>(self);
  const char* path = info->dlpi_name ? info->dlpi_name : "";
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return (vdso >= b.low && vdso < b.high) || (own >= b.low && own < b.high) ||
         info->dlpi_addr == ::getauxval(AT_BASE) || strncmp(base, "libcallscope-", 13) == 0;
}

}  // namespace callscope::rt
