// The hand-written x86-64 length decoder (used for the whole-code scan, see
// src/stack/arch.h) must agree with capstone instruction by instruction.
#include <capstone/capstone.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "stack/arch.h"
#include "stack/elf_image.h"

namespace callscope::stack {
namespace {

// Walks `code` with capstone and compares each instruction's length. Returns
// the number of instructions compared; mismatches are test failures.
size_t compare_with_capstone(const uint8_t* code, size_t size, uint64_t address) {
  csh h;
  EXPECT_EQ(cs_open(CS_ARCH_X86, CS_MODE_64, &h), CS_ERR_OK);
  cs_insn* insn = cs_malloc(h);
  size_t compared = 0, mismatches = 0;
  const uint8_t* p = code;
  size_t left = size;
  uint64_t pc = address;
  while (left > 0) {
    const uint8_t* here = p;
    if (!cs_disasm_iter(h, &p, &left, &pc, insn)) {  // data or padding: skip a byte
      ++p;
      --left;
      ++pc;
      continue;
    }
    const unsigned ours = instruction_length(here, left + insn->size);
    if (ours != insn->size && mismatches++ < 10) {
      ADD_FAILURE() << "at 0x" << std::hex << insn->address << ": " << insn->mnemonic << " "
                    << insn->op_str << ": capstone " << std::dec << insn->size << " bytes, ours "
                    << ours;
    }
    ++compared;
  }
  cs_free(insn, 1);
  cs_close(&h);
  EXPECT_EQ(mismatches, 0u);
  return compared;
}

TEST(stack_x86_decoder, HandPickedInstructions) {
  const struct {
    std::vector<uint8_t> bytes;
    unsigned length;
  } cases[] = {
      {{0x55}, 1},                                      // push rbp
      {{0x48, 0x89, 0xe5}, 3},                          // mov rbp, rsp
      {{0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00}, 7},  // sub rsp, 0x1000
      {{0xe8, 0, 0, 0, 0}, 5},                          // call rel32
      {{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, 6},        // nop word [rax+rax]
      {{0xf3, 0x0f, 0x1e, 0xfa}, 4},                    // endbr64
      {{0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10},       // movabs rax, imm64
      {{0xc5, 0xf9, 0x6f, 0x05, 0, 0, 0, 0}, 8},        // vmovdqa xmm0, [rip+0]
      {{0xc4, 0xe3, 0x79, 0x16, 0xc0, 0x01}, 6},        // vpextrd eax, xmm0, 1
      {{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x00}, 6},        // vmovups zmm0, [rax]
      {{0xf6, 0x00, 0x01}, 3},                          // test byte [rax], 1
      {{0xf7, 0x18}, 2},                                // neg dword [rax]
      {{0xc8, 0x10, 0x00, 0x00}, 4},                    // enter 16, 0
      {{0x0f, 0x84, 0, 0, 0, 0}, 6},                    // je rel32
  };
  for (const auto& c : cases) {
    EXPECT_EQ(instruction_length(c.bytes.data(), c.bytes.size()), c.length)
        << "first byte 0x" << std::hex << unsigned(c.bytes[0]);
  }
  const uint8_t truncated[] = {0xe8, 0x00};
  EXPECT_EQ(instruction_length(truncated, sizeof truncated), 0u);
}

TEST(stack_x86_decoder, ScanFindsCallsTailJumpsAndDynamicFrames) {
  // call +0x10; sub rsp, rax; jmp -0x100 (outside); ret
  const uint8_t code[] = {0xe8, 0x10, 0, 0, 0, 0x48, 0x29, 0xc4, 0xe9, 0x00, 0xff, 0xff, 0xff, 0xc3};
  BodyFacts facts;
  scan_body(code, sizeof code, 0x1000, facts);
  ASSERT_EQ(facts.refs.size(), 2u);
  EXPECT_EQ(facts.refs[0].kind, RefKind::kCall);
  EXPECT_EQ(facts.refs[0].target, 0x1000u + 5 + 0x10);
  EXPECT_EQ(facts.refs[1].kind, RefKind::kTailJump);
  EXPECT_EQ(facts.refs[1].target, 0x1000u + 13 - 0x100);
  EXPECT_TRUE(facts.dynamic_sp);
  // mov rsp, rbp and lea rsp, [rbp-16] restore a frame: not dynamic.
  const uint8_t restore[] = {0x48, 0x89, 0xec, 0x48, 0x8d, 0x65, 0xf0, 0xc3};
  BodyFacts r;
  scan_body(restore, sizeof restore, 0, r);
  EXPECT_FALSE(r.dynamic_sp);
}

// Every instruction of this test program and of the C library (gcc and
// hand-written assembly with AVX-512) decodes to capstone's length. Set
// CALLSCOPE_DECODER_CHECK=/path/to/libLLVM-14.so.1 to check one more file.
TEST(stack_x86_decoder, AgreesWithCapstoneOnRealCode) {
  std::vector<std::string> paths = {"/proc/self/exe", "/lib/x86_64-linux-gnu/libc.so.6"};
  if (const char* extra = std::getenv("CALLSCOPE_DECODER_CHECK")) paths.push_back(extra);
  for (const std::string& path : paths) {
    auto image = ElfImage::open(path);
    if (!image) {
      ADD_FAILURE() << image.error().message();
      continue;
    }
    size_t compared = 0;
    for (const CodeSection& s : image->code_sections()) {
      compared += compare_with_capstone(s.bytes, s.size, s.address);
    }
    EXPECT_GT(compared, 1000u) << path;
  }
}

}  // namespace
}  // namespace callscope::stack
