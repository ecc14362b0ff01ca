// Frame sizes from DWARF call frame information (.eh_frame or .debug_frame),
// read in one linear pass: libdw's dwarf_next_cfi splits the section into
// CIEs and FDEs, and a small interpreter runs each FDE's CFA program to find
// the largest CFA offset. A per-address dwarf_cfi_addrframe lookup would have
// to be repeated at every row of every FDE, which is far too slow for a
// 100 MB library (see bench/stack/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "stack/elf_image.h"

namespace callscope::stack {

// What the CFA program of one FDE says about its function's frame.
struct FdeFrame {
  uint64_t start = 0;  // ELF virtual address of the first byte covered
  uint64_t end = 0;    // one past the last byte
  // Largest CFA offset while the CFA is sp-based, in bytes. On x86-64 it
  // counts the return address, so a function that never moves rsp has 8.
  // This is GCC's -fstack-usage figure for a static frame without a frame
  // pointer.
  uint32_t max_sp_offset = 0;
  // The CFA moved to another register (rbp after `mov rbp, rsp`): the rest of
  // the frame is invisible to CFI and has to be read from the prologue.
  bool uses_frame_register = false;
  // The CFA is a DWARF expression (gcc's stack realignment).
  bool cfa_expression = false;
};

// The FDEs of a file, sorted by start address: every FDE of .eh_frame, and
// those of .debug_frame for code .eh_frame does not cover (a build with
// -g -fno-asynchronous-unwind-tables has .eh_frame only for the C runtime).
struct CfiFrames {
  std::vector<FdeFrame> frames;
  // Set when a section could not be walked to its end (a corrupt entry that
  // hides where the next one starts): the functions whose FDE would have
  // followed are read from their prologue, and the output says so.
  std::string problem;
};
// `sp_register`: the DWARF number of the stack pointer (7 on x86-64, 31 on
// AArch64, 13 on ARM); `entry_depth`: the CFA offset at a function's entry
// (8 on x86-64: the return address) until a CIE says otherwise.
Result<CfiFrames> read_cfi_frames(const ElfImage& image, uint64_t sp_register, uint32_t entry_depth);

}  // namespace callscope::stack
