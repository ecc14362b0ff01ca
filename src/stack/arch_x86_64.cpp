// x86-64: an instruction-length decoder for the whole-code scan (call graph,
// dynamic frames) and a capstone-based prologue reader. See arch.h.
#include <capstone/capstone.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "stack/arch.h"
#include "stack/capstone_loader.h"

namespace callscope::stack {
namespace {

constexpr unsigned kMaxInsn = 15;
constexpr unsigned kRegRdx = 2;
constexpr unsigned kRegRsp = 4;
constexpr unsigned kRegRbp = 5;
constexpr uint32_t kRedZone = 128;

// One-byte opcode map. Bits: M = has ModRM, B = imm8, Z = imm16/32 (operand
// size), W = imm16, X = invalid in 64-bit mode, S = special-cased in code.
enum : uint8_t { M = 1, B = 2, Z = 4, W = 8, X = 16, S = 32 };
constexpr uint8_t kOneByte[256] = {
    // 0x00
    M, M, M, M, B, Z, X, X, M, M, M, M, B, Z, X, S,
    // 0x10
    M, M, M, M, B, Z, X, X, M, M, M, M, B, Z, X, X,
    // 0x20 (26, 2E are prefixes)
    M, M, M, M, B, Z, S, X, M, M, M, M, B, Z, S, X,
    // 0x30 (36, 3E are prefixes)
    M, M, M, M, B, Z, S, X, M, M, M, M, B, Z, S, X,
    // 0x40 REX
    S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S,
    // 0x50 push/pop
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    // 0x60 (62 EVEX, 64-67 prefixes)
    X, X, S, M, S, S, S, S, Z, M | Z, B, M | B, 0, 0, 0, 0,
    // 0x70 jcc rel8
    B, B, B, B, B, B, B, B, B, B, B, B, B, B, B, B,
    // 0x80
    M | B, M | Z, X, M | B, M, M, M, M, M, M, M, M, M, M, M, M | S,
    // 0x90
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, X, 0, 0, 0, 0, 0,
    // 0xA0 (A0-A3 moffs: special)
    S, S, S, S, 0, 0, 0, 0, B, Z, 0, 0, 0, 0, 0, 0,
    // 0xB0 (B8-BF: imm32 or imm64 with REX.W: special)
    B, B, B, B, B, B, B, B, S, S, S, S, S, S, S, S,
    // 0xC0 (C4, C5 VEX; C8 enter)
    M | B, M | B, W, 0, S, S, M | B, M | Z, S, 0, W, 0, 0, B, X, 0,
    // 0xD0
    M, M, M, M, X, X, X, 0, M, M, M, M, M, M, M, M,
    // 0xE0
    B, B, B, B, B, B, B, B, Z, Z, X, B, 0, 0, 0, 0,
    // 0xF0 (F0, F2, F3 prefixes; F6, F7 test imm special)
    S, 0, S, S, 0, 0, M | S, M | S, 0, 0, 0, 0, 0, 0, M, M,
};

// Two-byte map (0F xx): which opcodes have no ModRM, which take an imm8.
bool two_byte_has_modrm(uint8_t op) {
  if (op >= 0x80 && op <= 0x8f) return false;  // jcc rel32
  if (op >= 0xc8 && op <= 0xcf) return false;  // bswap
  switch (op) {
    case 0x05: case 0x06: case 0x07: case 0x08: case 0x09: case 0x0b: case 0x0e:
    case 0x30: case 0x31: case 0x32: case 0x33: case 0x34: case 0x35: case 0x37:
    case 0x77: case 0xa0: case 0xa1: case 0xa2: case 0xa8: case 0xa9: case 0xaa:
      return false;
    default:
      return true;
  }
}

bool map1_has_imm8(uint8_t op) {
  return (op >= 0x70 && op <= 0x73) || op == 0xa4 || op == 0xac || op == 0xba || op == 0xc2 ||
         (op >= 0xc4 && op <= 0xc6);
}

// Bytes taken by a ModRM and what follows it (SIB, displacement).
unsigned modrm_length(const uint8_t* p, const uint8_t* end) {
  if (p >= end) return 0;
  const uint8_t modrm = p[0];
  const unsigned mod = modrm >> 6, rm = modrm & 7;
  unsigned n = 1;
  if (mod == 3) return n;
  if (rm == 4) {
    if (p + 1 >= end) return 0;
    const uint8_t sib = p[1];
    ++n;
    if (mod == 0 && (sib & 7) == 5) n += 4;
  } else if (mod == 0 && rm == 5) {
    n += 4;  // rip-relative
  }
  if (mod == 1) n += 1;
  if (mod == 2) n += 4;
  return n;
}

// What the scanner needs to know about one decoded instruction.
struct Insn {
  unsigned length = 0;
  uint8_t rex = 0;
  bool opsize16 = false;
  bool two_byte = false;  // 0F map
  bool vex = false;       // VEX/EVEX/XOP encoded: never a branch or rsp write we track
  bool notrack = false;   // 3E prefix: on an indirect jmp, CET's mark of a switch table
  uint8_t opcode = 0;
  const uint8_t* modrm = nullptr;  // nullptr when there is none
  int64_t imm = 0;                 // rel8/rel32 of branches
};

int32_t read_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Decodes one instruction's length and the fields above; length 0 on failure.
Insn decode(const uint8_t* code, uint64_t avail) {
  Insn in;
  const uint8_t* p = code;
  const uint8_t* end = code + (avail < kMaxInsn ? avail : kMaxInsn);
  bool addr32 = false;
  // Legacy prefixes and REX. A REX counts only right before the opcode: one
  // followed by another prefix is ignored, as the CPU does.
  for (; p < end; ++p) {
    const uint8_t b = *p;
    if ((b & 0xf0) == 0x40) {
      in.rex = b;
      continue;
    }
    if (b == 0x3e) in.notrack = true;
    if (b == 0x66) {
      in.opsize16 = true;
    } else if (b == 0x67) {
      addr32 = true;
    } else if (!(b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e ||
                 b == 0x26 || b == 0x64 || b == 0x65)) {
      break;
    }
    in.rex = 0;
  }
  if (p >= end) return in;
  const uint8_t op = *p++;
  in.opcode = op;
  unsigned imm = 0;
  bool has_modrm = false;

  auto vex_tail = [&](unsigned map, unsigned payload) -> bool {
    // payload bytes, then the opcode, ModRM, and an imm8 for some opcodes.
    if (p + payload + 1 >= end) return false;
    p += payload;
    const uint8_t vop = *p++;
    in.vex = true;
    in.opcode = vop;
    has_modrm = !(map == 1 && vop == 0x77);  // vzeroupper/vzeroall take no ModRM
    if (map == 3 || (map == 1 && map1_has_imm8(vop)) || map == 8) imm = 1;
    if (map == 10) imm = 4;
    return true;
  };

  if (op == 0x0f) {
    if (p >= end) return in;
    const uint8_t op2 = *p++;
    in.two_byte = true;
    in.opcode = op2;
    if (op2 == 0x38) {
      if (p >= end) return in;
      ++p;
      has_modrm = true;
    } else if (op2 == 0x3a) {
      if (p >= end) return in;
      ++p;
      has_modrm = true;
      imm = 1;
    } else if (op2 == 0x0f) {  // 3DNow!: ModRM then an opcode byte
      has_modrm = true;
      imm = 1;
    } else if (op2 >= 0x80 && op2 <= 0x8f) {
      imm = 4;
    } else {
      has_modrm = two_byte_has_modrm(op2);
      if (map1_has_imm8(op2)) imm = 1;
    }
  } else if (op == 0xc5) {  // VEX, 2 bytes
    if (in.rex != 0 || !vex_tail(1, 1)) return in;
  } else if (op == 0xc4) {  // VEX, 3 bytes
    if (in.rex != 0 || p >= end || !vex_tail(p[0] & 0x1f, 2)) return in;
  } else if (op == 0x62) {  // EVEX
    if (in.rex != 0 || p >= end || !vex_tail(p[0] & 0x07, 3)) return in;
  } else if (op == 0x8f && p < end && ((p[0] >> 3) & 7) != 0) {  // XOP
    if (!vex_tail(p[0] & 0x1f, 2)) return in;
  } else {
    const uint8_t f = kOneByte[op];
    if (f & X) return in;
    has_modrm = (f & M) != 0;
    if (f & B) imm = 1;
    if (f & Z) imm = in.opsize16 && !(op == 0xe8 || op == 0xe9) ? 2 : 4;
    if (f & W) imm = 2;
    if (op == 0xc8) imm = 3;  // enter iw, ib
    if (op >= 0xa0 && op <= 0xa3) imm = addr32 ? 4 : 8;
    if (op >= 0xb8 && op <= 0xbf) imm = (in.rex & 8) ? 8 : (in.opsize16 ? 2 : 4);
    if ((op == 0xf6 || op == 0xf7) && p < end && ((p[0] >> 3) & 7) <= 1) {
      imm = op == 0xf6 ? 1 : (in.opsize16 ? 2 : 4);
    }
    if (op == 0x0f || (f & S && !(f & M) && !(op >= 0xa0 && op <= 0xa3) &&
                       !(op >= 0xb8 && op <= 0xbf) && op != 0xc8)) {
      return in;  // a prefix in the wrong place, or a lone REX
    }
  }
  if (has_modrm) {
    const unsigned n = modrm_length(p, end);
    if (n == 0) return in;
    in.modrm = p;
    p += n;
  }
  if (p + imm > end) return in;
  if (imm == 1) in.imm = static_cast<int8_t>(p[0]);
  if (imm == 4) in.imm = read_i32(p);
  p += imm;
  in.length = static_cast<unsigned>(p - code);
  return in;
}

unsigned modrm_reg(const Insn& in) { return ((in.modrm[0] >> 3) & 7) | ((in.rex & 4) ? 8 : 0); }
unsigned modrm_rm(const Insn& in) { return (in.modrm[0] & 7) | ((in.rex & 1) ? 8 : 0); }
bool modrm_direct(const Insn& in) { return (in.modrm[0] >> 6) == 3; }
bool modrm_rip(const Insn& in) { return (in.modrm[0] & 0xc7) == 0x05; }
// A memory operand with an index register ([base + index*scale + disp]).
bool modrm_indexed(const Insn& in) {
  if (in.modrm == nullptr || modrm_direct(in) || (in.modrm[0] & 7) != 4) return false;
  return (((in.modrm[1] >> 3) & 7) | ((in.rex & 2) ? 8 : 0)) != 4;
}
int32_t rip_disp(const Insn& in) { return read_i32(in.modrm + 1); }

// True when the instruction sets rsp from something that is not a constant
// offset of rsp or rbp: the mark of alloca and VLAs (gcc: sub rsp, rax;
// clang: mov rsp, rcx). Restoring rsp from rbp (mov rsp, rbp; lea rsp,
// [rbp-16]) ends a frame and is not dynamic.
bool moves_sp_dynamically(const Insn& in) {
  if (in.vex || in.two_byte || in.modrm == nullptr || !(in.rex & 8)) return false;
  const unsigned reg = modrm_reg(in), rm = modrm_rm(in);
  switch (in.opcode) {
    case 0x29: case 0x01:  // sub/add r/m64, r64
      return modrm_direct(in) && rm == kRegRsp;
    case 0x2b: case 0x03:  // sub/add r64, r/m64
      return reg == kRegRsp;
    case 0x89:  // mov r/m64, r64
      return modrm_direct(in) && rm == kRegRsp && reg != kRegRbp;
    case 0x8b:  // mov r64, r/m64
      return reg == kRegRsp && !(modrm_direct(in) && rm == kRegRbp);
    case 0x8d: {  // lea rsp, [base + ...]
      if (reg != kRegRsp || modrm_rip(in) || modrm_direct(in)) return false;
      unsigned base = in.modrm[0] & 7;
      if (base == 4) base = in.modrm[1] & 7;  // SIB
      base |= (in.rex & 1) ? 8 : 0;
      return base != kRegRsp && base != kRegRbp;
    }
    default:
      return false;
  }
}

// Memory operands [rsp - N] and [rbp - N] (with or without an index): a
// leaf function using the 128 bytes below rsp that the x86-64 ABI leaves to
// it (the red zone), outside its frame; with a frame pointer, how far below
// rbp the locals go.
void note_below_sp(const Insn& in, BodyFacts& out) {
  const unsigned mod = in.modrm[0] >> 6;
  if (mod == 0 || mod == 3) return;  // no displacement (or a register)
  const bool sib = (in.modrm[0] & 7) == 4;
  const unsigned base = (sib ? (in.modrm[1] & 7) : (in.modrm[0] & 7)) | ((in.rex & 1) ? 8 : 0);
  const uint8_t* disp_at = in.modrm + (sib ? 2 : 1);
  const int64_t disp = mod == 1 ? static_cast<int8_t>(disp_at[0]) : read_i32(disp_at);
  if (disp >= 0) return;
  const uint32_t below = static_cast<uint32_t>(std::min<int64_t>(-disp, 1 << 30));
  if (base == kRegRsp) out.red_zone = std::max(out.red_zone, std::min(below, kRedZone));
  if (base == kRegRbp) out.below_rbp = std::max(out.below_rbp, below);
}

}  // namespace

unsigned instruction_length(const uint8_t* code, uint64_t avail) {
  return decode(code, avail).length;
}

void scan_body(const uint8_t* code, uint64_t size, uint64_t address, BodyFacts& out, bool all_rel32) {
  uint64_t off = 0;
  uint64_t rdx_code_pointer = 0, rdx_lea_end = 0;
  // Instructions decoded, and the count at the last load through an indexed
  // operand (the table read of a switch).
  uint64_t count = 0, indexed_load_at = 0;
  int table_reg = -1;
  constexpr uint64_t kSwitchWindow = 8;
  while (off < size) {
    const Insn in = decode(code + off, size - off);
    if (in.length == 0) {
      ++out.undecodable;
      ++off;
      continue;
    }
    const uint64_t site = address + off;
    const uint64_t next = site + in.length;
    off += in.length;
    ++count;
    // A reference made from this instruction, with its length.
    auto add = [&out, &in](CodeRef ref) {
      ref.length = static_cast<uint8_t>(in.length);
      out.refs.push_back(ref);
    };
    if (!in.vex && in.modrm != nullptr) note_below_sp(in, out);
    if (in.vex) continue;
    if (in.two_byte) {
      if (in.opcode >= 0x80 && in.opcode <= 0x8f) {
        const uint64_t target = next + static_cast<uint64_t>(in.imm);
        // In an object file a rel32 is the linker's to fill: report every
        // one, the relocation decides where it goes.
        if (target < address || target >= address + size || all_rel32) {
          add({site, target, RefKind::kTailJump, 0});
        }
      }
      continue;
    }
    const uint8_t op = in.opcode;
    // The register a switch reads its table into: `movsxd rax, [rdx+rax*4]`,
    // then maybe `add rax, rdx`; any other write to it ends the table.
    if ((op == 0x8b || op == 0x63) && in.modrm != nullptr) {
      if (modrm_indexed(in)) {
        indexed_load_at = count;
        table_reg = static_cast<int>(modrm_reg(in));
      } else if (static_cast<int>(modrm_reg(in)) == table_reg) {
        table_reg = -1;
      }
    } else if (table_reg >= 0 && in.modrm != nullptr && (op == 0x01 || op == 0x03 || op == 0x89 || op == 0x8d)) {
      // add reg, reg keeps it (the PIC table's base); mov or lea into it ends it.
      const int dest = op == 0x03 || op == 0x8d ? static_cast<int>(modrm_reg(in))
                                                : (modrm_direct(in) ? static_cast<int>(modrm_rm(in)) : -2);
      if (dest == table_reg && op != 0x01 && op != 0x03) table_reg = -1;
    }
    if (op == 0xe8) {
      add({site, next + static_cast<uint64_t>(in.imm), RefKind::kCall,
                          rdx_code_pointer, 0, rdx_lea_end});
      rdx_code_pointer = 0;
    } else if (op == 0xe9 || op == 0xeb || (op >= 0x70 && op <= 0x7f)) {
      const uint64_t target = next + static_cast<uint64_t>(in.imm);
      if (target < address || target >= address + size || (all_rel32 && op == 0xe9)) {
        add({site, target, RefKind::kTailJump, 0});
      }
    } else if (op == 0xff && in.modrm != nullptr) {
      const unsigned sub = (in.modrm[0] >> 3) & 7;
      if (sub == 2) {
        if (modrm_rip(in)) {
          add({site, next + static_cast<uint64_t>(int64_t{rip_disp(in)}),
                              RefKind::kCallGot, rdx_code_pointer, 0, rdx_lea_end});
        } else {
          add({site, 0, RefKind::kCallIndirect, 0});
        }
        rdx_code_pointer = 0;
      } else if (sub == 4 && modrm_rip(in)) {
        add({site, next + static_cast<uint64_t>(int64_t{rip_disp(in)}),
                            RefKind::kJumpGot, 0});
      } else if (sub == 4) {
        // jmp reg / jmp [mem]: a switch table when the target comes from an
        // indexed table (jmp [table + idx*8], or `jmp reg` with the register
        // a table entry was loaded into just before) or CET marks it
        // notrack; else a tail call through a pointer (a virtual call,
        // std::thread's _M_run): unknown callee.
        const bool from_table = modrm_direct(in) && static_cast<int>(modrm_rm(in)) == table_reg &&
                                indexed_load_at != 0 && count - indexed_load_at <= kSwitchWindow;
        const bool table = in.notrack || modrm_indexed(in) || from_table;
        if (!table) add({site, 0, RefKind::kJumpIndirect, 0});
      }
    } else if (op == 0x8d && in.modrm != nullptr && modrm_rip(in) && (in.rex & 8) &&
               modrm_reg(in) == kRegRdx) {
      rdx_code_pointer = next + static_cast<uint64_t>(int64_t{rip_disp(in)});
      rdx_lea_end = next;
    } else if (moves_sp_dynamically(in)) {
      out.dynamic_sp = true;
    }
  }
}

namespace {

// What one instruction does to rsp, for the two linear walks below.
struct SpEffect {
  enum Kind : uint8_t { kNone, kMove, kCall, kCondJump, kJump, kReturn, kLeave, kDynamic } kind = kNone;
  int64_t bytes = 0;  // kMove: bytes pushed (negative: given back)
};

SpEffect sp_effect(const Insn& in) {
  if (in.vex) return {};
  const uint8_t op = in.opcode;
  if (in.two_byte) return {op >= 0x80 && op <= 0x8f ? SpEffect::kCondJump : SpEffect::kNone, 0};
  // rsp +/- a constant: sub/add rsp, imm (REX.W 81/83 /5, /0).
  const bool rsp_imm = (op == 0x81 || op == 0x83) && in.modrm != nullptr && (in.rex & 8) && modrm_direct(in) &&
                       modrm_rm(in) == kRegRsp;
  const unsigned sub = in.modrm != nullptr ? (in.modrm[0] >> 3) & 7 : 8;
  if ((op >= 0x50 && op <= 0x57) || op == 0x6a || op == 0x68 || (op == 0xff && sub == 6)) return {SpEffect::kMove, 8};
  if ((op >= 0x58 && op <= 0x5f) || (op == 0x8f && sub == 0)) return {SpEffect::kMove, -8};
  if (rsp_imm && sub == 5) return {SpEffect::kMove, in.imm};
  if (rsp_imm && sub == 0) return {SpEffect::kMove, -in.imm};
  if (op == 0xe8 || (op == 0xff && sub == 2)) return {SpEffect::kCall, 0};
  if (op >= 0x70 && op <= 0x7f) return {SpEffect::kCondJump, 0};
  if (op == 0xe9 || op == 0xeb || (op == 0xff && sub == 4)) return {SpEffect::kJump, 0};
  if (op == 0xc3 || op == 0xc2) return {SpEffect::kReturn, 0};
  if (op == 0xc9) return {SpEffect::kLeave, 0};
  if (moves_sp_dynamically(in)) return {SpEffect::kDynamic, 0};
  return {};
}

}  // namespace

uint32_t sp_at_first_call(const uint8_t* code, uint64_t size) {
  int64_t cur = 8;
  for (uint64_t off = 0; off < size;) {
    const Insn in = decode(code + off, size - off);
    if (in.length == 0) return 8;
    off += in.length;
    const SpEffect e = sp_effect(in);
    switch (e.kind) {
      case SpEffect::kNone: case SpEffect::kLeave: break;
      case SpEffect::kMove: cur += e.bytes; break;
      case SpEffect::kCall: return cur > 8 ? static_cast<uint32_t>(std::min<int64_t>(cur, UINT32_MAX)) : 8;
      default: return 8;  // a branch, a return or a non-constant move comes first
    }
  }
  return 8;
}

uint32_t call_argument_bytes(const uint8_t* code, uint64_t size, uint64_t address,
                             uint64_t body_start) {
  if (body_start < address || body_start - address >= size) return 0;
  int64_t pending = 0, most = 0;
  for (uint64_t off = body_start - address; off < size;) {
    const Insn in = decode(code + off, size - off);
    if (in.length == 0) {
      ++off;
      continue;
    }
    off += in.length;
    const SpEffect e = sp_effect(in);
    switch (e.kind) {
      case SpEffect::kMove: pending += e.bytes; break;
      case SpEffect::kCall: most = std::max(most, pending); break;
      case SpEffect::kJump: case SpEffect::kReturn: case SpEffect::kLeave:
        pending = 0;  // ret, leave, jmp: what follows starts from the frame again
        break;
      default: break;
    }
    if (pending < 0) pending = 0;
  }
  return static_cast<uint32_t>(std::min<int64_t>(most, UINT32_MAX));
}

std::vector<PltSlot> scan_plt(const uint8_t* code, uint64_t size, uint64_t address) {
  static constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
  std::vector<PltSlot> slots;
  uint64_t off = 0;
  while (off < size) {
    const Insn in = decode(code + off, size - off);
    if (in.length == 0) {
      ++off;
      continue;
    }
    if (!in.vex && !in.two_byte && in.opcode == 0xff && in.modrm != nullptr &&
        ((in.modrm[0] >> 3) & 7) == 4 && modrm_rip(in)) {
      const uint64_t site = address + off;
      const uint64_t got = site + in.length + static_cast<uint64_t>(int64_t{rip_disp(in)});
      slots.push_back({site, got});
      if (off >= 4 && std::memcmp(code + off - 4, kEndbr64, 4) == 0) {
        slots.push_back({site - 4, got});
      }
    }
    off += in.length;
  }
  return slots;
}

namespace {

// Capstone-based prologue reader: simulates rsp from `start` over the frame
// set-up instructions, which compilers may interleave with other work.
class X86Arch final : public Arch {
 public:
  explicit X86Arch(csh handle) : handle_(handle), insn_(cs().malloc(handle)) {}
  ~X86Arch() override {
    cs().free(insn_, 1);
    cs().close(&handle_);
  }

  Isa isa() const override { return Isa::kX86_64; }
  uint64_t dwarf_sp() const override { return 7; }
  uint32_t entry_depth() const override { return 8; }
  void scan(const uint8_t* code, uint64_t size, uint64_t address, const std::vector<AddressRange>&,
            BodyFacts& out) override {
    scan_body(code, size, address, out, relocatable_);
  }
  void set_relocatable(bool on) override { relocatable_ = on; }
  uint32_t sp_at_first_call(const uint8_t* code, uint64_t size, uint64_t) override {
    return stack::sp_at_first_call(code, size);
  }
  uint32_t call_argument_bytes(const uint8_t* code, uint64_t size, uint64_t address,
                               uint64_t body_start) override {
    return stack::call_argument_bytes(code, size, address, body_start);
  }

  PrologueFrame read_prologue(const uint8_t* code, uint64_t size, uint64_t address, uint64_t start,
                              uint32_t depth) override {
    static constexpr int kMaxInstructions = 64;
    PrologueFrame frame;
    int64_t cur = depth, max = depth;
    if (start < address || start - address >= size) {
      frame.bytes = depth;
      return frame;
    }
    const uint8_t* p = code + (start - address);
    size_t left = size - (start - address);
    uint64_t pc = start;
    frame.body_start = start;
    // Stack-clash protection (-fstack-clash-protection) allocates a large
    // frame page by page: `lea r11, [rsp - N]`, then a loop of `sub rsp,
    // 4096; or [rsp], 0` until `cmp rsp, r11`, or the same pairs unrolled.
    x86_reg probe_reg = X86_REG_INVALID;
    int64_t probe_target = 0;
    bool allocated = false, probe_loop_done = false, allocated_seen = false;
    auto is_probe = [](const cs_x86& x) {
      return x.op_count == 2 && x.operands[0].type == X86_OP_MEM &&
             x.operands[0].mem.base == X86_REG_RSP && x.operands[1].type == X86_OP_IMM &&
             x.operands[1].imm == 0;
    };
    for (int i = 0; i < kMaxInstructions && cs().disasm_iter(handle_, &p, &left, &pc, insn_); ++i) {
      const cs_x86& x = insn_->detail->x86;
      const bool two_ops = x.op_count == 2;
      const bool dst_rsp = x.op_count >= 1 && x.operands[0].type == X86_OP_REG &&
                           x.operands[0].reg == X86_REG_RSP;
      const bool src_imm = two_ops && x.operands[1].type == X86_OP_IMM;
      const int64_t imm = src_imm ? x.operands[1].imm : 0;
      if (allocated) {
        // After the allocation only a probe of the page just taken belongs
        // to the prologue.
        if (insn_->id == X86_INS_OR && is_probe(x)) {
          allocated = false;
          continue;
        }
        break;
      }
      const int64_t before = cur;
      bool stop = false;
      switch (insn_->id) {
        case X86_INS_PUSH: cur += 8; break;
        case X86_INS_PUSHFQ: cur += 8; break;
        case X86_INS_POP: cur -= 8; break;
        case X86_INS_SUB:
          if (!dst_rsp) break;
          if (src_imm) cur += imm; else frame.dynamic = true;
          // The frame is allocated: what follows is the body, unless this is
          // a page of a probed allocation.
          if (probe_reg == X86_REG_INVALID && src_imm) allocated = true; else if (!src_imm) stop = true;
          break;
        case X86_INS_CMP:
          if (probe_reg != X86_REG_INVALID && two_ops && x.operands[0].type == X86_OP_REG &&
              x.operands[1].type == X86_OP_REG &&
              ((x.operands[0].reg == X86_REG_RSP && x.operands[1].reg == probe_reg) ||
               (x.operands[1].reg == X86_REG_RSP && x.operands[0].reg == probe_reg))) {
            cur = probe_target;  // the loop runs until rsp reaches the target
            probe_reg = X86_REG_INVALID;
            probe_loop_done = true;
          }
          break;
        case X86_INS_OR:
          break;  // a probe inside the loop
        case X86_INS_ADD:  // add rsp, -128 is gcc's short form of sub rsp, 128
          if (!dst_rsp) break;
          if (src_imm) cur -= imm; else frame.dynamic = true;
          if (!src_imm) stop = true; else if (imm < 0 && probe_reg == X86_REG_INVALID) allocated = true;
          break;
        case X86_INS_AND:
          // Realignment to A bytes: GCC counts A - 16 bytes of padding.
          if (dst_rsp && src_imm && imm < -16) cur += -imm - 16;
          break;
        case X86_INS_LEA:
          if (!dst_rsp && two_ops && x.operands[0].type == X86_OP_REG && x.operands[1].type == X86_OP_MEM &&
              x.operands[1].mem.base == X86_REG_RSP && x.operands[1].mem.index == X86_REG_INVALID &&
              x.operands[1].mem.disp < 0) {
            probe_reg = x.operands[0].reg;  // the end of a probed allocation
            probe_target = cur - x.operands[1].mem.disp;
          } else if (dst_rsp && two_ops && x.operands[1].type == X86_OP_MEM &&
              x.operands[1].mem.base == X86_REG_RSP && x.operands[1].mem.index == X86_REG_INVALID) {
            cur -= x.operands[1].mem.disp;
            stop = x.operands[1].mem.disp < 0;
          } else if (dst_rsp) {
            stop = true;
          }
          break;
        case X86_INS_MOV:
          if (dst_rsp) {
            frame.dynamic = !(two_ops && x.operands[1].type == X86_OP_REG &&
                              x.operands[1].reg == X86_REG_RBP);
            stop = true;
          }
          break;
        case X86_INS_ENTER:
          cur += 8 + (x.op_count >= 1 ? x.operands[0].imm : 0);
          stop = true;
          break;
        case X86_INS_CALL: case X86_INS_RET: case X86_INS_JMP: case X86_INS_LEAVE:
        case X86_INS_UD2: case X86_INS_HLT: case X86_INS_SYSCALL:
          stop = true;
          break;
        default:
          // Conditional jumps end the straight-line prologue (but the one
          // closing a probe loop); anything else that writes rsp is not
          // understood, so stop there too.
          if (probe_loop_done && cs().insn_group(handle_, insn_, CS_GRP_JUMP)) {
            probe_loop_done = false;
            break;
          }
          if (probe_reg != X86_REG_INVALID && cs().insn_group(handle_, insn_, CS_GRP_JUMP)) break;
          // A conditional jump before the allocation is shrink-wrapping's
          // early exit: the frame is built on the path that falls through.
          if (cs().insn_group(handle_, insn_, CS_GRP_JUMP) && !allocated_seen) break;
          if (cs().insn_group(handle_, insn_, CS_GRP_JUMP) || dst_rsp) stop = true;
          break;
      }
      if (cur > max) max = cur;
      if (cur != before || allocated) frame.body_start = pc;
      if (allocated) allocated_seen = true;
      if (stop) break;
    }
    frame.bytes = static_cast<uint32_t>(max);
    return frame;
  }

  std::string describe(const uint8_t* code, uint64_t avail, uint64_t address) override {
    return disassemble_one(handle_, insn_, code, std::min<uint64_t>(avail, 16), address);
  }

 private:
  csh handle_;
  cs_insn* insn_;
  bool relocatable_ = false;
};

}  // namespace

Result<std::unique_ptr<Arch>> Arch::create(Isa isa) {
  if (!cs().error.empty()) return Error(cs().error);
  if (isa != Isa::kX86_64) return make_arm_arch(isa);
  csh handle = 0;
  if (cs().open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) {
    return Error("cannot initialise capstone for x86-64");
  }
  cs().option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  return std::unique_ptr<Arch>(new X86Arch(handle));
}

}  // namespace callscope::stack
