// Addresses to module and function names, with elfutils (libdwfl).
//
// One Dwfl session per process of the trace, fed the module map the runtime
// recorded (path and load bias); lookups are cached per address. Debug info
// is found in the file itself, or separately by build-id or .gnu_debuglink
// (libdwfl's standard search: /usr/lib/debug and next to the file). A module
// whose file is gone, or whose build-id no longer matches the one recorded,
// is reported once and its addresses are shown as module+0xoffset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

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

  // Resolves an absolute address seen in process `process_index`.
  const Symbol& lookup(uint32_t process_index, uint64_t addr);
  // Problems met (missing files, build-id mismatches), one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }

  struct Process;  // per traced process: its Dwfl session and modules

 private:
  Process& process(uint32_t index);
  const format::TraceReader& trace_;
  SymbolizerOptions options_;
  std::vector<std::unique_ptr<Process>> processes_;
  std::vector<std::string> warnings_;
};

std::string demangle(const std::string& name);

}  // namespace callscope::symbolize
