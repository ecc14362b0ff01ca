// Which functions the engine counts, and where chronological events are
// written: include/exclude globs on function names and module names, and
// chrono globs (CALLSCOPE_INCLUDE, _EXCLUDE, _INCLUDE_MODULES,
// _EXCLUDE_MODULES, _CHRONO; comma-separated).
//
// The runtime records raw addresses and never symbolizes for output; to
// match a name it reads the module's ELF symbol table (.symtab, else
// .dynsym) once, from the file, and demangles C++ names with the program's
// own __cxa_demangle. Each function is decided once (a cache by address,
// and the engine keeps the decision in the call-tree node).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "format/trace_format.h"
#include "runtime/runtime.h"

namespace callscope::rt {

// A comma-separated list of globs from a CALLSCOPE_* variable. Plain
// zero-initialized globals only: a dynamic initializer could run after our
// constructor has already read the environment, and undo it.
inline constexpr int kMaxGlobs = 256;  // per list; more are ignored (docs/configuration.md)
struct GlobList {
  const char* globs[kMaxGlobs];
  int n;
};
// Splits variable `var` into `list`, the text copied into the runtime's
// storage for such lists (64 KiB in all; what does not fit is ignored).
void read_glob_list(const char* var, GlobList& list);
bool any_glob_matches(const GlobList& l, const char* name);
// A module matches by its file name or its whole path.
bool module_matches(const GlobList& l, const char* path);

void filter_configure();      // reads the environment; once, at process init
bool filter_active();         // any include/exclude glob is set
bool filter_has_chrono();     // any chrono glob is set
// kProfNodeExcluded and/or kProfNodeChrono for the function at `fn`.
uint32_t filter_flags(uint64_t fn);

// The decisions filter_flags took, by address: fn (48 bits) | (flags + 1)
// << 48 in one word, open addressing from filter_slot(fn); never evicted,
// and written once per function (compare-and-swap from 0). Null unless a
// filter is set (and its memory was had).
inline constexpr uint32_t kFilterCacheSlots = 1u << 16;
extern uint64_t* g_filter_cache;
CALLSCOPE_NOINSTR inline uint32_t filter_slot(uint64_t fn) {
  return static_cast<uint32_t>((fn * 0x9E3779B97F4A7C15ull) >> 48) & (kFilterCacheSlots - 1);
}
// The filters leave fn out, and it starts no chrono region: the hooks may
// return at once (hooks.cpp, callscope_rt_filter_enter). Looks at the first
// slot only: false for a function not decided yet, or placed further on.
CALLSCOPE_NOINSTR inline bool filter_skips(uint64_t fn) {
  constexpr uint64_t kExcludedOnly = uint64_t{fmt::kProfNodeExcluded + 1} << 48;
  return __atomic_load_n(&g_filter_cache[filter_slot(fn)], __ATOMIC_RELAXED) == (fn | kExcludedOnly);
}
// Any function can be left out (include or exclude lists, by name or
// module), and the decisions have their cache: the hooks skip what
// filter_skips says (filter_configure sets it).
extern bool g_filter_skipping;
// Whether the hooks skip fn's calls, deciding fn first if no call of it
// did yet: the engine's slow paths ask before they keep a frame, so that
// no frame is kept for a call whose exit the hooks will skip.
CALLSCOPE_NOINSTR inline bool filter_decide_skip(uint64_t fn) {
  if (!g_filter_skipping) return false;
  if (filter_skips(fn)) return true;
  return filter_flags(fn) == fmt::kProfNodeExcluded && filter_skips(fn);
}

}  // namespace callscope::rt
