// Addresses to module and function names, with elfutils (libdwfl).
//
// Per process of the trace, Dwfl sessions fed the module map the runtime
// recorded (path and load bias): a library closed and loaded again at the
// same address, or another one loaded where it was, is a module of its own
// with the ticks it was loaded and unloaded (libdwfl refuses overlapping
// modules in one session, so such loads go to sessions of their own). An
// address seen at a known time resolves in the module loaded then; an
// address alone in the one whose file matches (format/module_map.h).
// Lookups are cached per address (and module). Debug info
// is found in the file itself, or separately by build-id or .gnu_debuglink
// (libdwfl's standard search: /usr/lib/debug and next to the file). A module
// whose file is gone, or whose build-id no longer matches the one recorded,
// is reported once and its addresses are shown as module+0xoffset. Where a
// library defines several names at one address (glibc's lseek, lseek64,
// llseek), the address is named by the one a module of the process imports
// (a library call shows as the program wrote it), else by the name a
// program would call (alias_rank in symbolizer.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/module_map.h"
#include "format/trace_reader.h"

struct Dwfl;

namespace callscope::symbolize {

struct Symbol {
  std::string module;    // file name of the module ("app", "libc.so.6")
  std::string function;  // demangled unless disabled; empty when unknown
  uint64_t offset = 0;   // address - load bias (an ELF virtual address)
  std::string file;      // source file of the address, when debug info has it
  int line = 0;          // its line, 0 when unknown
  // "file:line", or "" when unknown.
  std::string location() const;
  // "function" when known, else "module+0xoffset", else "0xaddress".
  std::string display() const;
};

struct SymbolizerOptions {
  bool demangle = true;
};

class Symbolizer {
 public:
  Symbolizer(const format::TraceReader& trace, SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Resolves an absolute address seen in process `process_index` at trace
  // tick `tick`: in the module that held the address then.
  const Symbol& lookup(uint32_t process_index, uint64_t addr, uint64_t tick);
  // The same without a time: where several modules held the address over
  // time, the one whose file is there and matches the recording; of those,
  // one with a function that starts at the address (entries are function
  // starts), then one with a function that holds it, then the last loaded.
  const Symbol& lookup(uint32_t process_index, uint64_t addr);
  // Which module held an address when, for callers that key by address.
  const format::ModuleMap& modules() const { return *map_; }
  // The trace has grown (a trace being recorded, query -c): the modules it
  // lists now are looked up from here on. References returned before are
  // no longer valid.
  void refresh();
  // Problems met (missing files, build-id mismatches), one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }

  struct Process;  // per traced process: its Dwfl session and modules

 private:
  Process& process(uint32_t index);
  Symbol resolve(Process& p, int64_t mod, uint64_t addr);  // mod: index in the process's modules, -1: none
  const format::TraceReader& trace_;
  std::unique_ptr<format::ModuleMap> map_;
  size_t modules_seen_ = 0;
  SymbolizerOptions options_;
  std::vector<std::unique_ptr<Process>> processes_;
  std::vector<std::string> warnings_;
};

std::string demangle(const std::string& name);

}  // namespace callscope::symbolize
