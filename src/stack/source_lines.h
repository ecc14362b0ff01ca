// Where each function is declared (file and line), and the source line of
// an instruction, from the DWARF debug information when the file has it:
// what tells two static functions of the same name apart, what gcc's
// -fstack-usage (.su) lines are keyed by, and where an indirect call is.
#pragma once

#include <libelf.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

typedef struct Dwarf Dwarf;

namespace callscope::stack {

struct SourceLine {
  std::string file;  // as the compiler wrote it (often absolute)
  uint32_t line = 0;
};

class DebugLines {
 public:
  // Without .debug_info every answer is empty.
  explicit DebugLines(Elf* elf);
  ~DebugLines();
  DebugLines(const DebugLines&) = delete;
  DebugLines& operator=(const DebugLines&) = delete;

  // Entry address (ELF virtual address) -> declaration of the function whose
  // code starts there.
  std::unordered_map<uint64_t, SourceLine> function_declarations() const;
  // The line-table row of an instruction.
  SourceLine line_at(uint64_t address);

 private:
  Dwarf* dw_ = nullptr;
  // Address ranges of the compilation units, read on the first line_at:
  // clang writes no .debug_aranges, which libdw's dwarf_addrdie needs.
  struct CuRange {
    uint64_t start, end, cu_offset;
  };
  std::vector<CuRange> cu_ranges_;
  bool cu_ranges_read_ = false;
};

}  // namespace callscope::stack
