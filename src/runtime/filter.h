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

#include <stdint.h>

namespace callscope::rt {

void filter_configure();      // reads the environment; once, at process init
bool filter_active();         // any include/exclude glob is set
bool filter_has_chrono();     // any chrono glob is set
// kProfNodeExcluded and/or kProfNodeChrono for the function at `fn`.
uint32_t filter_flags(uint64_t fn);

}  // namespace callscope::rt
