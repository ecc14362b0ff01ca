// AArch64 and Thumb-2 (Cortex-M): the body scan, prologue reader and
// listings, all with capstone. Firmware and AArch64 programs are small
// enough that capstone's speed (~8 MB/s) does not matter here, unlike for
// the x86-64 whole-code scan. The return address is in the link register,
// not on the stack: a frame is what the prologue pushes (lr among it when
// the function calls) and reserves, as gcc's -fstack-usage counts it.
#include <capstone/capstone.h>

#include <algorithm>
#include <string>

#include "stack/arch.h"
#include "stack/capstone_loader.h"

namespace callscope::stack {
namespace {

constexpr uint64_t kSwitchWindow = 8;

// An AArch64 immediate with its `lsl #N` applied (movz x12, #1, lsl #16).
int64_t shifted(const cs_arm64_op& o) {
  return o.shift.type == ARM64_SFT_LSL && o.shift.value < 64 ? static_cast<int64_t>(static_cast<uint64_t>(o.imm) << o.shift.value)
                                                               : o.imm;
}

// Skips the data ranges inside code; `off` is advanced past one when inside.
bool in_data(const std::vector<AddressRange>& data, uint64_t address, uint64_t& resume) {
  auto it = std::upper_bound(data.begin(), data.end(), address,
                             [](uint64_t a, const AddressRange& r) { return a < r.begin; });
  if (it == data.begin()) return false;
  --it;
  if (address >= it->end) return false;
  resume = it->end;
  return true;
}

class ArmArch : public Arch {
 public:
  ArmArch(csh handle, Isa isa) : handle_(handle), isa_(isa), insn_(cs().malloc(handle)) {}
  ~ArmArch() override {
    cs().free(insn_, 1);
    cs().close(&handle_);
  }
  Isa isa() const override { return isa_; }
  uint64_t dwarf_sp() const override { return isa_ == Isa::kAarch64 ? 31 : 13; }
  uint32_t entry_depth() const override { return 0; }
  uint32_t call_argument_bytes(const uint8_t*, uint64_t, uint64_t, uint64_t) override {
    return 0;  // stack arguments are stored into space the prologue reserved
  }
  uint32_t sp_at_first_call(const uint8_t* code, uint64_t size, uint64_t address) override {
    return read_prologue(code, size, address, address, 0).bytes;
  }
  std::string describe(const uint8_t* code, uint64_t avail, uint64_t address) override {
    return disassemble_one(handle_, insn_, code, std::min<uint64_t>(avail, 4), address);
  }

  void scan(const uint8_t* code, uint64_t size, uint64_t address, const std::vector<AddressRange>& data,
            BodyFacts& out) override {
    const unsigned step = isa_ == Isa::kAarch64 ? 4 : 2;
    uint64_t count = 0, indexed_load_at = 0;
    constant_reg_ = 0;
    uint64_t off = 0;
    while (off < size) {
      uint64_t resume = 0;
      if (!data.empty() && in_data(data, address + off, resume)) {
        off = std::max(off + step, resume - address);
        continue;
      }
      const uint8_t* p = code + off;
      size_t left = size - off;
      uint64_t pc = address + off;
      if (!cs().disasm_iter(handle_, &p, &left, &pc, insn_)) {
        out.undecodable += step;
        off += step;
        continue;
      }
      const uint64_t site = address + off;
      off += insn_->size;
      ++count;
      const auto inside = [&](uint64_t target) { return target >= address && target < address + size; };
      if (isa_ == Isa::kAarch64) {
        scan_a64(site, count, indexed_load_at, inside, out);
      } else {
        scan_thumb(site, count, indexed_load_at, inside, out);
      }
    }
  }

  PrologueFrame read_prologue(const uint8_t* code, uint64_t size, uint64_t address, uint64_t start,
                              uint32_t depth) override {
    static constexpr int kMaxInstructions = 48;
    PrologueFrame frame;
    int64_t cur = depth, max = depth;
    frame.body_start = start;
    if (start < address || start - address >= size) {
      frame.bytes = depth;
      return frame;
    }
    const uint8_t* p = code + (start - address);
    size_t left = size - (start - address);
    uint64_t pc = start;
    // Stack-clash probing: `sub x9, sp, #N` (the end), then a loop of `sub
    // sp, sp, #4096; str xzr, [sp, #...]` until `cmp sp, x9`.
    unsigned probe_reg = 0;
    int64_t probe_target = 0;
    bool probe_loop_done = false;
    constant_reg_ = 0;
    for (int i = 0; i < kMaxInstructions && cs().disasm_iter(handle_, &p, &left, &pc, insn_); ++i) {
      prologue_count_ = static_cast<uint64_t>(i) + 1;
      const int64_t before = cur;
      bool stop = false;
      if (isa_ == Isa::kAarch64) {
        stop = prologue_a64(cur, frame, probe_reg, probe_target, probe_loop_done);
      } else {
        stop = prologue_thumb(cur, frame);
      }
      if (cur > max) max = cur;
      if (cur != before) frame.body_start = pc;
      if (stop) break;
    }
    frame.bytes = static_cast<uint32_t>(std::max<int64_t>(max, 0));
    return frame;
  }

 private:
  template <typename Inside>
  void scan_a64(uint64_t site, uint64_t count, uint64_t& indexed_load_at, const Inside& inside, BodyFacts& out) {
    const cs_arm64& x = insn_->detail->arm64;
    const auto last_imm = [&]() -> int64_t {
      return x.op_count > 0 && x.operands[x.op_count - 1].type == ARM64_OP_IMM ? x.operands[x.op_count - 1].imm : -1;
    };
    switch (insn_->id) {
      case ARM64_INS_BL:
        out.refs.push_back({site, static_cast<uint64_t>(last_imm()), RefKind::kCall, 0, 4, 0});
        break;
      case ARM64_INS_B: case ARM64_INS_CBZ: case ARM64_INS_CBNZ: case ARM64_INS_TBZ: case ARM64_INS_TBNZ: {
        const int64_t t = last_imm();
        if (t >= 0 && !inside(static_cast<uint64_t>(t))) {
          out.refs.push_back({site, static_cast<uint64_t>(t), RefKind::kTailJump, 0, 4, 0});
        }
        break;
      }
      case ARM64_INS_BLR:
        out.refs.push_back({site, 0, RefKind::kCallIndirect, 0, 4, 0});
        break;
      case ARM64_INS_BR:
        // A switch reads its table with an indexed load just before.
        if (indexed_load_at == 0 || count - indexed_load_at > kSwitchWindow) {
          out.refs.push_back({site, 0, RefKind::kJumpIndirect, 0, 4, 0});
        }
        break;
      case ARM64_INS_LDR: case ARM64_INS_LDRB: case ARM64_INS_LDRH: case ARM64_INS_LDRSW:
      case ARM64_INS_LDRSB: case ARM64_INS_LDRSH:
        for (int k = 0; k < x.op_count; ++k) {
          if (x.operands[k].type == ARM64_OP_MEM && x.operands[k].mem.index != ARM64_REG_INVALID) indexed_load_at = count;
        }
        break;
      case ARM64_INS_SUB:  // add sp, sp, xN gives back what a sub took: not growth
        if (x.op_count == 3 && x.operands[0].type == ARM64_OP_REG && x.operands[0].reg == ARM64_REG_SP &&
            x.operands[2].type == ARM64_OP_REG && !constant_in(x.operands[2].reg, count)) {
          out.dynamic_sp = true;  // sp moved by a register: alloca, VLA
        }
        break;
      case ARM64_INS_MOV: case ARM64_INS_MOVZ:
        if (x.op_count == 2 && x.operands[0].type == ARM64_OP_REG && x.operands[0].reg == ARM64_REG_SP &&
            x.operands[1].type == ARM64_OP_REG && x.operands[1].reg != ARM64_REG_X29) {
          out.dynamic_sp = true;
        }
        note_constant(x.op_count == 2 && x.operands[0].type == ARM64_OP_REG && x.operands[1].type == ARM64_OP_IMM,
                      x.operands[0].reg, shifted(x.operands[1]), count);
        break;
      case ARM64_INS_MOVK:
        add_to_constant(x.op_count == 2 && x.operands[0].type == ARM64_OP_REG && x.operands[1].type == ARM64_OP_IMM,
                        x.operands[0].reg, shifted(x.operands[1]), count);
        break;
      default:
        break;
    }
  }

  template <typename Inside>
  void scan_thumb(uint64_t site, uint64_t count, uint64_t& indexed_load_at, const Inside& inside, BodyFacts& out) {
    const cs_arm& x = insn_->detail->arm;
    const uint8_t len = static_cast<uint8_t>(insn_->size);
    const auto first_imm = [&]() -> int64_t {
      for (int k = 0; k < x.op_count; ++k) {
        if (x.operands[k].type == ARM_OP_IMM) return static_cast<uint32_t>(x.operands[k].imm);
      }
      return -1;
    };
    const bool reg0 = x.op_count >= 1 && x.operands[0].type == ARM_OP_REG;
    switch (insn_->id) {
      case ARM_INS_BL:
        out.refs.push_back({site, static_cast<uint64_t>(first_imm()), RefKind::kCall, 0, len, 0});
        break;
      case ARM_INS_BLX:
        if (reg0) {
          out.refs.push_back({site, 0, RefKind::kCallIndirect, 0, len, 0});
        } else {
          out.refs.push_back({site, static_cast<uint64_t>(first_imm()), RefKind::kCall, 0, len, 0});
        }
        break;
      case ARM_INS_B: case ARM_INS_CBZ: case ARM_INS_CBNZ: {
        const int64_t t = first_imm();
        if (t >= 0 && !inside(static_cast<uint64_t>(t))) {
          out.refs.push_back({site, static_cast<uint64_t>(t), RefKind::kTailJump, 0, len, 0});
        }
        break;
      }
      case ARM_INS_BX:
        if (reg0 && x.operands[0].reg != ARM_REG_LR) out.refs.push_back({site, 0, RefKind::kJumpIndirect, 0, len, 0});
        break;
      case ARM_INS_MOV:
        note_constant(x.op_count == 2 && reg0 && x.operands[1].type == ARM_OP_IMM, x.operands[0].reg,
                      x.operands[1].imm, count);
        if (x.op_count == 2 && reg0 && x.operands[1].type == ARM_OP_REG) {
          if (x.operands[0].reg == ARM_REG_PC && x.operands[1].reg != ARM_REG_LR) {
            out.refs.push_back({site, 0, RefKind::kJumpIndirect, 0, len, 0});
          }
          if (x.operands[0].reg == ARM_REG_SP && x.operands[1].reg != ARM_REG_R7) out.dynamic_sp = true;
        }
        break;
      case ARM_INS_LDR:
        if (reg0 && x.operands[0].reg == ARM_REG_PC && x.op_count >= 2 && x.operands[1].type == ARM_OP_MEM) {
          const arm_op_mem& m = x.operands[1].mem;
          // ldr pc, [sp], #4 is a return; ldr pc, [pc, rN, lsl #2] a switch.
          if (m.base != ARM_REG_SP && m.index == ARM_REG_INVALID &&
              (indexed_load_at == 0 || count - indexed_load_at > kSwitchWindow)) {
            out.refs.push_back({site, 0, RefKind::kJumpIndirect, 0, len, 0});
          }
        } else if (x.op_count >= 2 && x.operands[1].type == ARM_OP_MEM && x.operands[1].mem.index != ARM_REG_INVALID) {
          indexed_load_at = count;
        }
        break;
      case ARM_INS_SUB:  // add sp, rN gives back what a sub took: not growth
        if (reg0 && x.operands[0].reg == ARM_REG_SP && x.operands[x.op_count - 1].type == ARM_OP_REG &&
            x.operands[x.op_count - 1].reg != ARM_REG_SP && !constant_in(x.operands[x.op_count - 1].reg, count)) {
          out.dynamic_sp = true;
        }
        break;
      case ARM_INS_MOVW:
        note_constant(x.op_count == 2 && reg0 && x.operands[1].type == ARM_OP_IMM, x.operands[0].reg,
                      x.operands[1].imm, count);
        break;
      case ARM_INS_MOVT:
        add_to_constant(x.op_count == 2 && reg0 && x.operands[1].type == ARM_OP_IMM, x.operands[0].reg,
                        static_cast<int64_t>(static_cast<uint32_t>(x.operands[1].imm) << 16), count);
        break;
      default:
        break;
    }
  }

  // One AArch64 prologue instruction; true to stop.
  bool prologue_a64(int64_t& cur, PrologueFrame& frame, unsigned& probe_reg, int64_t& probe_target,
                    bool& probe_loop_done) {
    const cs_arm64& x = insn_->detail->arm64;
    const auto is_sp = [&](int k) {
      return k < x.op_count && x.operands[k].type == ARM64_OP_REG && x.operands[k].reg == ARM64_REG_SP;
    };
    const auto imm_of = [&](int k) -> int64_t {
      const cs_arm64_op& o = x.operands[k];
      int64_t v = o.imm;
      if (o.shift.type == ARM64_SFT_LSL) v <<= o.shift.value;
      return v;
    };
    switch (insn_->id) {
      case ARM64_INS_STP: case ARM64_INS_STR:
        // stp x29, x30, [sp, #-32]!: a pre-indexed store that moves sp.
        for (int k = 0; k < x.op_count; ++k) {
          const cs_arm64_op& o = x.operands[k];
          if (o.type == ARM64_OP_MEM && o.mem.base == ARM64_REG_SP && x.writeback && o.mem.disp < 0) cur -= o.mem.disp;
        }
        return false;
      case ARM64_INS_SUB:
        if (is_sp(0) && x.op_count == 3 && is_sp(1)) {
          if (x.operands[2].type == ARM64_OP_IMM) {
            cur += imm_of(2);
            return false;
          }
          if (constant_in(x.operands[2].reg, prologue_count_)) {
            cur += constant_value_;  // mov x12, #4112; sub sp, sp, x12
            return false;
          }
          frame.dynamic = true;
          return true;
        }
        if (x.op_count == 3 && x.operands[0].type == ARM64_OP_REG && is_sp(1) && x.operands[2].type == ARM64_OP_IMM) {
          probe_reg = x.operands[0].reg;  // the end of a probed allocation
          probe_target = cur + imm_of(2);
        }
        return false;
      case ARM64_INS_ADD:
        if (is_sp(0) && is_sp(1) && x.op_count == 3 && x.operands[2].type == ARM64_OP_IMM) cur -= imm_of(2);
        return false;
      case ARM64_INS_MOVK:
        add_to_constant(x.op_count == 2 && x.operands[0].type == ARM64_OP_REG && x.operands[1].type == ARM64_OP_IMM,
                        x.operands[0].reg, shifted(x.operands[1]), prologue_count_);
        return false;
      case ARM64_INS_CMP:
        if (probe_reg != 0 && x.op_count == 2 && is_sp(0) && x.operands[1].type == ARM64_OP_REG &&
            x.operands[1].reg == static_cast<arm64_reg>(probe_reg)) {
          cur = probe_target;
          probe_reg = 0;
          probe_loop_done = true;
        }
        return false;
      case ARM64_INS_MOV: case ARM64_INS_MOVZ:
        note_constant(x.op_count == 2 && x.operands[0].type == ARM64_OP_REG && x.operands[1].type == ARM64_OP_IMM,
                      x.operands[0].reg, shifted(x.operands[1]), prologue_count_);
        if (is_sp(0) && x.op_count == 2 && x.operands[1].type == ARM64_OP_REG) {
          // mov sp, x29 restores the frame (an epilogue); another register moves it.
          frame.dynamic |= x.operands[1].reg != ARM64_REG_X29;
          return true;
        }
        return false;
      default:
        if (cs().insn_group(handle_, insn_, CS_GRP_JUMP) || cs().insn_group(handle_, insn_, CS_GRP_CALL) ||
            cs().insn_group(handle_, insn_, CS_GRP_RET) || insn_->id == ARM64_INS_RET) {
          if (probe_loop_done || probe_reg != 0) {
            probe_loop_done = false;
            return false;  // the branch closing a probe loop
          }
          // A conditional branch (shrink-wrapping's early exit): the frame
          // is built on the path that falls through.
          const bool conditional = insn_->id == ARM64_INS_CBZ || insn_->id == ARM64_INS_CBNZ ||
                                   insn_->id == ARM64_INS_TBZ || insn_->id == ARM64_INS_TBNZ ||
                                   (insn_->id == ARM64_INS_B && x.cc != ARM64_CC_INVALID && x.cc != ARM64_CC_AL);
          return !conditional;
        }
        return false;
    }
  }

  // One Thumb-2 prologue instruction; true to stop.
  bool prologue_thumb(int64_t& cur, PrologueFrame& frame) {
    const cs_arm& x = insn_->detail->arm;
    const auto is_sp = [&](int k) {
      return k < x.op_count && x.operands[k].type == ARM_OP_REG && x.operands[k].reg == ARM_REG_SP;
    };
    switch (insn_->id) {
      case ARM_INS_PUSH:
        cur += 4 * x.op_count;
        return false;
      case ARM_INS_VPUSH:
        for (int k = 0; k < x.op_count; ++k) {
          const unsigned r = x.operands[k].reg;
          cur += (r >= ARM_REG_D0 && r <= ARM_REG_D31) ? 8 : 4;
        }
        return false;
      case ARM_INS_STMDB:
        if (is_sp(0) && x.writeback) cur += 4 * (x.op_count - 1);
        return false;
      case ARM_INS_STR: case ARM_INS_STRD:
        for (int k = 0; k < x.op_count; ++k) {
          const cs_arm_op& o = x.operands[k];
          if (o.type == ARM_OP_MEM && o.mem.base == ARM_REG_SP && x.writeback && o.mem.disp < 0) cur -= o.mem.disp;
        }
        return false;
      case ARM_INS_SUB: case ARM_INS_SUBW:
        if (is_sp(0) && (x.op_count == 2 || is_sp(1))) {
          const cs_arm_op& o = x.operands[x.op_count - 1];
          if (o.type == ARM_OP_IMM) {
            cur += o.imm;
            return false;
          }
          if (o.type == ARM_OP_REG && constant_in(o.reg, prologue_count_)) {
            cur += constant_value_;  // movw r3, #4112; sub sp, sp, r3
            return false;
          }
          frame.dynamic = true;
          return true;
        }
        return false;
      case ARM_INS_ADD: case ARM_INS_ADDW:
        if (is_sp(0) && (x.op_count == 2 || is_sp(1)) && x.operands[x.op_count - 1].type == ARM_OP_IMM) {
          cur -= x.operands[x.op_count - 1].imm;
        }
        return false;
      case ARM_INS_MOVW:
        note_constant(x.op_count == 2 && x.operands[1].type == ARM_OP_IMM, x.operands[0].reg, x.operands[1].imm,
                      prologue_count_);
        return false;
      case ARM_INS_MOVT:
        add_to_constant(x.op_count == 2 && x.operands[1].type == ARM_OP_IMM, x.operands[0].reg,
                        static_cast<int64_t>(static_cast<uint32_t>(x.operands[1].imm) << 16), prologue_count_);
        return false;
      case ARM_INS_MOV:
        note_constant(x.op_count == 2 && x.operands[1].type == ARM_OP_IMM, x.operands[0].reg, x.operands[1].imm,
                      prologue_count_);
        if (is_sp(0) && x.op_count == 2 && x.operands[1].type == ARM_OP_REG) {
          // mov sp, r7 restores the frame (an epilogue); another register moves it.
          frame.dynamic |= x.operands[1].reg != ARM_REG_R7;
          return true;
        }
        return false;
      default: {
        // A conditional branch (shrink-wrapping's early exit, `cbz r0,
        // .Lret`): the frame is built on the path that falls through.
        const bool conditional = insn_->id == ARM_INS_CBZ || insn_->id == ARM_INS_CBNZ ||
                                 (insn_->id == ARM_INS_B && x.cc != ARM_CC_INVALID && x.cc != ARM_CC_AL);
        if (conditional) return false;
        return cs().insn_group(handle_, insn_, CS_GRP_JUMP) || cs().insn_group(handle_, insn_, CS_GRP_CALL) ||
               cs().insn_group(handle_, insn_, CS_GRP_RET) || insn_->id == ARM_INS_POP || insn_->id == ARM_INS_BX;
      }
    }
  }

  // A register just loaded with a constant (`mov x12, #4112` before `sub sp,
  // sp, x12`, a frame too large for an immediate): that move of sp is not
  // dynamic. Valid for the two instructions after the load.
  void note_constant(bool is_load, unsigned reg, int64_t value, uint64_t count) {
    if (!is_load) return;
    constant_reg_ = reg;
    constant_value_ = value;
    constant_at_ = count;
  }
  // movk x16, #hi, lsl #16 / movt r3, #hi: the rest of a constant being
  // built; the constant stays valid for two more instructions.
  void add_to_constant(bool is_part, unsigned reg, int64_t part, uint64_t count) {
    if (!is_part || constant_reg_ == 0 || reg != constant_reg_) return;
    constant_value_ |= part;
    constant_at_ = count;
  }
  bool constant_in(unsigned reg, uint64_t count) const {
    return constant_reg_ != 0 && reg == constant_reg_ && count - constant_at_ <= 2;
  }

  csh handle_;
  Isa isa_;
  cs_insn* insn_;
  unsigned constant_reg_ = 0;
  int64_t constant_value_ = 0;
  uint64_t constant_at_ = 0;
  uint64_t prologue_count_ = 0;
};

}  // namespace

Result<std::unique_ptr<Arch>> make_arm_arch(Isa isa) {
  csh handle = 0;
  const bool a64 = isa == Isa::kAarch64;
  const cs_err err = a64 ? cs().open(CS_ARCH_ARM64, CS_MODE_ARM, &handle)
                         : cs().open(CS_ARCH_ARM, static_cast<cs_mode>(CS_MODE_THUMB | CS_MODE_MCLASS), &handle);
  if (err != CS_ERR_OK) return Error(std::string("cannot initialise capstone for ") + (a64 ? "AArch64" : "Thumb"));
  cs().option(handle, CS_OPT_DETAIL, CS_OPT_ON);
  return std::unique_ptr<Arch>(new ArmArch(handle, isa));
}

}  // namespace callscope::stack
