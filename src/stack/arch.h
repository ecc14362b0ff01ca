// The instruction-set-specific part of the stack analysis, behind the Arch
// interface: arch_x86_64.cpp, and arch_arm.cpp for AArch64 and Thumb-2.
//
// Two readers with different costs:
//  - scan_body() reads every instruction of every function (the whole .text
//    of a 100 MB library), so it is a hand-written instruction-length decoder
//    that only classifies the few instructions the analysis needs. Capstone
//    decodes ~8 MB/s here, which alone would take ~6 s on libLLVM; the
//    decoder is cross-checked against capstone by a unit test.
//  - read_prologue() uses capstone with operand details, but only on the few
//    instructions of a prologue, and only for functions whose CFI cannot give
//    the frame size (frame-pointer frames, no CFI at all).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace callscope::stack {

enum class RefKind : uint8_t {
  kCall,          // call rel32: target is the callee
  kTailJump,      // jmp/jcc to an address outside the function: a tail call
  kCallIndirect,  // call through a register or memory: callee unknown
  kCallGot,       // call [rip+X] (-fno-plt): target is the GOT entry
  kJumpGot,       // jmp [rip+X] (PLT stub or tail call through GOT): target is the GOT entry
  kJumpIndirect,  // jmp through a register or memory that is not a switch table: callee unknown
};

// A reference from one function's code to other code.
struct CodeRef {
  uint64_t site = 0;    // address of the instruction
  uint64_t target = 0;  // code address or GOT entry (see RefKind); 0 when unknown
  RefKind kind = RefKind::kCall;
  // For calls: the code address last loaded with `lea rdx, [rip+X]` before
  // the call, else 0. It is pthread_create's third argument, the thread start
  // routine, when the callee is pthread_create.
  uint64_t rdx_code_pointer = 0;
  uint8_t length = 0;  // bytes of the instruction (its relocation lies inside)
  // The end of that `lea rdx, [rip+X]` (its displacement is the last 4
  // bytes): where an object file's relocation names the pointer.
  uint64_t rdx_lea_end = 0;
};

struct BodyFacts {
  std::vector<CodeRef> refs;
  // rsp changed by a non-constant (sub rsp, reg; mov rsp, reg): alloca or VLA.
  bool dynamic_sp = false;
  // Bytes the decoder could not decode (it resynchronizes one byte later).
  uint32_t undecodable = 0;
  // Most bytes below rsp the code touches ([rsp - N], at most the ABI's 128):
  // the red zone a leaf function uses without moving rsp.
  uint32_t red_zone = 0;
  // Most bytes below rbp the code touches ([rbp - N]): with a frame pointer,
  // what lies below the frame the prologue allocated is red zone too.
  uint32_t below_rbp = 0;
};

// Scans the code of one function, [address, address + size), appending to
// `out`. Jumps inside the range are not reported, except with `all_rel32`
// (object files, whose rel32 displacements are filled in by relocations).
void scan_body(const uint8_t* code, uint64_t size, uint64_t address, BodyFacts& out, bool all_rel32 = false);

// Length of the instruction at `code` (at most `avail` bytes), 0 if it cannot
// be decoded. Exposed for the cross-check against capstone.
unsigned instruction_length(const uint8_t* code, uint64_t avail);

// PLT stubs: for each `jmp [rip+X]` in a PLT section, the slot address a call
// targets (the jmp itself and an endbr64 just before it) and its GOT entry.
struct PltSlot {
  uint64_t slot = 0;
  uint64_t got = 0;
};
std::vector<PltSlot> scan_plt(const uint8_t* code, uint64_t size, uint64_t address);

// The frame a prologue builds, in bytes below the CFA (so the return address,
// 8 bytes, is included), read by simulating rsp over the prologue.
struct PrologueFrame {
  uint32_t bytes = 8;
  bool dynamic = false;  // the prologue itself moves rsp by a non-constant
  uint64_t body_start = 0;  // address after the prologue's last move of rsp
};

// The most bytes pushed for the stack arguments of one call (push, and the
// `sub rsp, N` that aligns them) at any call from `body_start` on: what
// -O0 code with a frame pointer adds below its frame, which its CFI cannot
// show. gcc's .su counts it ("dynamic,bounded").
// Bytes between the CFA and rsp at the first call of a function (the return
// address counts 8), followed from the entry through pushes and constant
// moves of rsp; 8 when a branch or a non-constant move comes first.
uint32_t sp_at_first_call(const uint8_t* code, uint64_t size);

uint32_t call_argument_bytes(const uint8_t* code, uint64_t size, uint64_t address, uint64_t body_start);

// A range of bytes inside code that is data (ARM's literal pools and tables,
// marked by the `$d` mapping symbols): not decoded.
struct AddressRange {
  uint64_t begin = 0, end = 0;
};

enum class Isa : uint8_t {
  kX86_64,
  kAarch64,
  kThumb,  // 32-bit ARM in Thumb-2 (Cortex-M)
};

// One instruction set's readers. The x86-64 one scans bodies with the fast
// decoder above; the ARM ones use capstone throughout (firmware is small).
class Arch {
 public:
  static Result<std::unique_ptr<Arch>> create(Isa isa);
  virtual ~Arch() = default;
  virtual Isa isa() const = 0;
  // DWARF register number of the stack pointer (the CFA is based on it).
  virtual uint64_t dwarf_sp() const = 0;
  // Bytes below the CFA when a function starts: the return address on
  // x86-64 (pushed by the call), none on ARM (it is in the link register).
  virtual uint32_t entry_depth() const = 0;
  // The whole-function scan (see scan_body above); `data` lists the data
  // ranges inside code, sorted, or is empty.
  virtual void scan(const uint8_t* code, uint64_t size, uint64_t address,
                    const std::vector<AddressRange>& data, BodyFacts& out) = 0;
  // The code is an object file's: displacements are relocated later.
  virtual void set_relocatable(bool) {}
  virtual uint32_t sp_at_first_call(const uint8_t* code, uint64_t size, uint64_t address) = 0;
  virtual uint32_t call_argument_bytes(const uint8_t* code, uint64_t size, uint64_t address,
                                       uint64_t body_start) = 0;
  // Reads from `start` (inside the function's code `code`..`code+size` at
  // `address`) with the frame already `depth` bytes deep at `start`.
  virtual PrologueFrame read_prologue(const uint8_t* code, uint64_t size, uint64_t address,
                                      uint64_t start, uint32_t depth) = 0;
  // The instruction at `address` as text ("call rax"), for listings.
  virtual std::string describe(const uint8_t* code, uint64_t avail, uint64_t address) = 0;
};

// The ARM readers (arch_arm.cpp).
Result<std::unique_ptr<Arch>> make_arm_arch(Isa isa);

}  // namespace callscope::stack
