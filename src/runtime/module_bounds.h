// Where a loaded module lies, from its program headers (dl_iterate_phdr):
// what the module map, the GOT hooks and the code patching all need.
#pragma once

#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

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

// Whether the dynamic linker is still relocating a module another thread is
// loading: dl_iterate_phdr lists it from the moment it is mapped, and its
// RELRO is made read-only only once relocation is done (before that its
// GOT and its patchable-entry list hold unrelocated values, and making its
// RELRO read-only under the linker would crash it). Told by the RELRO's
// first page still being writable (/proc/self/maps). A module without
// RELRO is taken as done.
__attribute__((no_instrument_function)) inline bool relro_writable(uint64_t relro_lo, uint64_t relro_hi) {
  // The first whole page (the last one, if partly RELRO, stays writable).
  const uint64_t relro = (relro_lo + 4095) & ~uint64_t{4095};
  if (relro_hi < relro + 4096) return false;
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  size_t have = 0;
  bool writable = false, found = false;
  for (;;) {
    const ssize_t n = ::read(fd, buf + have, sizeof buf - have);
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    size_t start = 0;
    for (size_t i = 0; i < have && !found; ++i) {
      if (buf[i] != '\n') continue;
      // "lo-hi perms ...": parse lo and hi in hex.
      uint64_t lo = 0, hi = 0;
      size_t k = start;
      auto hex = [&](uint64_t& v) {
        for (; k < i; ++k) {
          const char c = buf[k];
          const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
          if (d < 0) break;
          v = v * 16 + static_cast<uint64_t>(d);
        }
      };
      hex(lo);
      ++k;  // '-'
      hex(hi);
      if (relro >= lo && relro < hi && k + 2 < i) {
        found = true;
        writable = buf[k + 2] == 'w';  // " rw-p": the perms after the space
      }
      start = i + 1;
    }
    if (found) break;
    memmove(buf, buf + start, have - start);
    have -= start;
    if (have == sizeof buf) have = 0;  // a line longer than the buffer: not one of ours
  }
  ::close(fd);
  return writable;
}

__attribute__((no_instrument_function)) inline bool module_relocating(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      const uint64_t lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      return relro_writable(lo, lo + info->dlpi_phdr[i].p_memsz);
    }
  return false;
}

}  // namespace callscope::rt

