// The library functions the GOT hooks never take (patch/got.cpp), in one
// place for the runtime, which leaves their slots alone, and for the
// recorder, which must not count a pointer to one of them among the calls
// the hooks miss (symbolize/data_pointers.h). Header-only, libc only: the
// runtime links no libstdc++.
#pragma once

#include <string.h>

namespace callscope::rt {

// Functions that return twice (setjmp would save our trampoline as where to
// come back, vfork's child would return through the parent's frame), that
// use their caller's address (dlsym(RTLD_NEXT), dlopen's $ORIGIN and
// namespace), or that switch stacks (ucontext, boost.context's *_fcontext).
inline constexpr const char* kNeverHooked[] = {
    "setjmp",   "_setjmp",   "__sigsetjmp", "sigsetjmp",   "savectx",   "getcontext",  "swapcontext",
    "setcontext", "makecontext", "vfork",  "__vfork",     "clone",      "clone3",      "__clone",
    "dlsym",    "dlvsym",    "dlopen",      "dlmopen",     "__libc_dlopen_mode", "__libc_dlsym",
    "__tls_get_addr", "__libc_start_main", "_dl_find_object", "__libc_single_threaded",
};

__attribute__((no_instrument_function)) inline bool never_hooked(const char* name) {
  if (strncmp(name, "_Unwind_", 8) == 0 || strncmp(name, "_dl_", 4) == 0) return true;
  if (strstr(name, "fcontext") != nullptr) return true;  // boost.context's stack switches (jump_fcontext, ...)
  for (const char* n : kNeverHooked)
    if (strcmp(n, name) == 0) return true;
  return false;
}

}  // namespace callscope::rt
