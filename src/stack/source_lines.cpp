// Declaration lines of functions from .debug_info, read with libdw: one walk
// over the compilation units, descending only into the scopes that hold
// function definitions (namespaces, classes, and functions and blocks for
// their local classes), not into expressions; and
// line-table lookups for single instructions.
#include "stack/source_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <vector>

namespace callscope::stack {
namespace {

bool holds_functions(int tag) {
  // Classes local to a function (and their methods, lambdas) are nested in
  // the function's DIE, possibly inside a lexical block.
  return tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
         tag == DW_TAG_union_type || tag == DW_TAG_module || tag == DW_TAG_subprogram ||
         tag == DW_TAG_lexical_block;
}

// Scopes nest a few levels deep in real code; a corrupt file's deeper
// nesting is not followed (the walk recurses).
constexpr int kMaxDepth = 64;

void walk(Dwarf_Die* parent, std::unordered_map<uint64_t, SourceLine>& out, int depth = 0) {
  if (depth > kMaxDepth) return;
  Dwarf_Die die;
  if (dwarf_child(parent, &die) != 0) return;
  do {
    const int tag = dwarf_tag(&die);
    if (tag == DW_TAG_subprogram) {
      int line = 0;
      const char* file = dwarf_decl_file(&die);
      if (file != nullptr && dwarf_decl_line(&die, &line) == 0 && line > 0) {
        // A function split in hot and cold parts has DW_AT_ranges: each part
        // is a symbol of its own ("f [clone .cold]") and gets the line too.
        Dwarf_Addr base = 0, start = 0, end = 0;
        ptrdiff_t offset = 0;
        while ((offset = dwarf_ranges(&die, offset, &base, &start, &end)) > 0) {
          if (start != 0) out.try_emplace(start, SourceLine{file, static_cast<uint32_t>(line)});
        }
      }
    }
    if (holds_functions(tag) && dwarf_haschildren(&die) > 0) walk(&die, out, depth + 1);
  } while (dwarf_siblingof(&die, &die) == 0);
}

}  // namespace

DebugLines::DebugLines(Elf* elf) : dw_(dwarf_begin_elf(elf, DWARF_C_READ, nullptr)) {}

DebugLines::~DebugLines() {
  if (dw_ != nullptr) dwarf_end(dw_);
}

std::unordered_map<uint64_t, SourceLine> DebugLines::function_declarations() const {
  std::unordered_map<uint64_t, SourceLine> out;
  if (dw_ == nullptr) return out;  // no debug information: no lines
  Dwarf_CU* cu = nullptr;
  Dwarf_Die cudie;
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  while (dwarf_get_units(dw_, cu, &cu, &version, &unit_type, &cudie, nullptr) == 0) {
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) continue;
    walk(&cudie, out);
  }
  return out;
}

SourceLine DebugLines::line_at(uint64_t address) {
  SourceLine out;
  if (dw_ == nullptr) return out;
  if (!cu_ranges_read_) {
    cu_ranges_read_ = true;
    Dwarf_CU* cu = nullptr;
    Dwarf_Die cudie;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    while (dwarf_get_units(dw_, cu, &cu, &version, &unit_type, &cudie, nullptr) == 0) {
      Dwarf_Addr base = 0, start = 0, end = 0;
      ptrdiff_t offset = 0;
      while ((offset = dwarf_ranges(&cudie, offset, &base, &start, &end)) > 0) {
        if (end > start) cu_ranges_.push_back({start, end, dwarf_dieoffset(&cudie)});
      }
    }
  }
  for (const CuRange& r : cu_ranges_) {
    if (address < r.start || address >= r.end) continue;
    Dwarf_Die cudie;
    if (dwarf_offdie(dw_, r.cu_offset, &cudie) == nullptr) break;
    Dwarf_Line* row = dwarf_getsrc_die(&cudie, address);
    int line = 0;
    const char* file = row != nullptr ? dwarf_linesrc(row, nullptr, nullptr) : nullptr;
    if (file == nullptr || dwarf_lineno(row, &line) != 0 || line <= 0) break;
    out.file = file;
    out.line = static_cast<uint32_t>(line);
    break;
  }
  return out;
}

}  // namespace callscope::stack
