// Capstone, loaded when the stack analysis first needs it, not when
// callscope starts: its 80,000 relocations cost every command (report,
// replay ...) a few milliseconds otherwise. The library is the one the build
// found (pkg-config capstone), by its soname. Shared by the x86-64 and ARM
// readers.
#pragma once

#include <capstone/capstone.h>

#include <string>

namespace callscope::stack {

struct Capstone {
  decltype(&::cs_open) open = nullptr;
  decltype(&::cs_option) option = nullptr;
  decltype(&::cs_malloc) malloc = nullptr;
  decltype(&::cs_free) free = nullptr;
  decltype(&::cs_close) close = nullptr;
  decltype(&::cs_disasm_iter) disasm_iter = nullptr;
  decltype(&::cs_insn_group) insn_group = nullptr;
  std::string error;
};

// The library, loaded on the first call; error says why when it could not be.
const Capstone& cs();

// "mnemonic operands" of the instruction at `address`, decoded from at most
// `avail` bytes into `insn`; "(undecodable)" when it is not one.
std::string disassemble_one(csh handle, cs_insn* insn, const uint8_t* code, uint64_t avail, uint64_t address);

}  // namespace callscope::stack
