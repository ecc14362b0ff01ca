// Library functions a module keeps pointers to in its data, where the GOT
// hooks (record --libcalls, --patch-imports, --patch-callers) cannot see
// the calls made through them.
//
// The hooks replace GOT slots: JUMP_SLOT relocations (calls through the
// PLT) and GLOB_DAT ones of functions (-fno-plt calls, addresses loaded
// from the GOT). A pointer to an imported function written into data by
// the dynamic linker -- an R_X86_64_64 relocation naming the function, as
// in SQLite's table of system calls (`aSyscall[]`: open, read, write,
// fcntl, ...) or any static table of callbacks in a PIC module -- holds the
// function's own address, and every call through it goes straight to the
// library, unrecorded. Nothing in the trace says so; this reads each
// hooked module's dynamic relocations (its file, after the run) so that
// record's summary can (docs/recording.md, "Limits").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace callscope::symbolize {

// Which modules' slots the GOT hooks took, as the CALLSCOPE_* settings say
// (runtime/patch/got.cpp).
struct GotHooks {
  bool libcalls = false;             // CALLSCOPE_LIBCALLS: the executable's slots
  std::vector<std::string> imports;  // CALLSCOPE_PATCH_IMPORTS: every slot of these modules (globs)
  std::vector<std::string> callers;  // CALLSCOPE_PATCH_CALLERS: every slot bound to these modules (globs)
  bool any() const { return libcalls || !imports.empty() || !callers.empty(); }
};

// A module of a traced process, as loaded.
struct LoadedModule {
  std::string path;
  bool main = false;  // the process's executable
};

// A module whose data holds pointers to functions its slots would have
// hooked: how many such relocations, and the functions' names (each once,
// in the order of the relocations).
struct DataPointers {
  std::string path;
  uint64_t pointers = 0;
  std::vector<std::string> functions;
};

// For the modules of a recording (every process's, in load order): those
// whose data points to functions `hooks` would have hooked in them, each
// file once. A function the hooks never take (never_hooked.h) is left out;
// so are the runtime's own modules, the dynamic linker and the vDSO. A
// module whose file cannot be read is skipped.
std::vector<DataPointers> data_pointers(const std::vector<LoadedModule>& modules, const GotHooks& hooks);

// "libsqlite3.so.0: 12 pointers to hooked functions stored in data (read,
// write, fcntl, ...): calls through them are not recorded"
std::string describe(const DataPointers& d);

}  // namespace callscope::symbolize
