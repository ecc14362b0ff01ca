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

}  // namespace callscope::rt
