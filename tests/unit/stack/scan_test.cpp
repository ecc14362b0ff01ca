// What the body scan and the prologue reader make of hand-assembled code:
// the corners where a frame or an edge was once missed (issue 16).
#include <gtest/gtest.h>

#include <vector>

#include "stack/arch.h"

namespace callscope::stack {
namespace {

BodyFacts scan(const std::vector<uint8_t>& code) {
  BodyFacts facts;
  scan_body(code.data(), code.size(), 0x1000, facts);
  return facts;
}

size_t count(const BodyFacts& f, RefKind kind) {
  size_t n = 0;
  for (const CodeRef& r : f.refs) n += r.kind == kind;
  return n;
}

TEST(stack_scan, TailJumpThroughAPointerIsUnknown) {
  // mov rax, [rdi]; mov rax, [rax+16]; jmp rax   (a virtual tail call)
  EXPECT_EQ(count(scan({0x48, 0x8b, 0x07, 0x48, 0x8b, 0x40, 0x10, 0xff, 0xe0}), RefKind::kJumpIndirect), 1u);
  // jmp [rdi+8]
  EXPECT_EQ(count(scan({0xff, 0x67, 0x08}), RefKind::kJumpIndirect), 1u);
}

TEST(stack_scan, PointerFromAnArrayIsNotASwitch) {
  // mov rdi, [rbx+rax*8]; mov rax, [rdi]; jmp [rax+0x18]   (objs[i]->f())
  EXPECT_EQ(count(scan({0x48, 0x8b, 0x3c, 0xc3, 0x48, 0x8b, 0x07, 0xff, 0x60, 0x18}), RefKind::kJumpIndirect), 1u);
  // mov rax, [rbx+rcx*8]; mov rax, [rax]; jmp rax   (the table entry replaced)
  EXPECT_EQ(count(scan({0x48, 0x8b, 0x04, 0xcb, 0x48, 0x8b, 0x00, 0xff, 0xe0}), RefKind::kJumpIndirect), 1u);
}

TEST(stack_scan, ObjectFilesReportEveryRel32) {
  // jmp +0 (a relocated tail call in an object file: the field is still 0)
  const std::vector<uint8_t> code = {0x31, 0xc0, 0xe9, 0, 0, 0, 0, 0xc3};
  BodyFacts linked, object;
  scan_body(code.data(), code.size(), 0x1000, linked);
  scan_body(code.data(), code.size(), 0x1000, object, true);
  EXPECT_EQ(count(linked, RefKind::kTailJump), 0u);
  ASSERT_EQ(count(object, RefKind::kTailJump), 1u);
  EXPECT_EQ(object.refs[0].length, 5u);
}

TEST(stack_scan, SwitchTablesAreNotUnknown) {
  // movsxd rax, [rdx+rax*4]; add rax, rdx; jmp rax   (PIC jump table)
  EXPECT_EQ(count(scan({0x48, 0x63, 0x04, 0x82, 0x48, 0x01, 0xd0, 0xff, 0xe0}), RefKind::kJumpIndirect), 0u);
  // jmp [rax*8 + 0x402000]   (non-PIC jump table)
  EXPECT_EQ(count(scan({0xff, 0x24, 0xc5, 0x00, 0x20, 0x40, 0x00}), RefKind::kJumpIndirect), 0u);
  // gcc -O0: mov eax, [rdx+rax]; cdqe; lea rdx, [rip+0]; add rax, rdx; jmp rax
  EXPECT_EQ(count(scan({0x8b, 0x04, 0x02, 0x48, 0x98, 0x48, 0x8d, 0x15, 0, 0, 0, 0, 0x48, 0x01, 0xd0, 0xff,
                        0xe0}),
                  RefKind::kJumpIndirect),
            0u);
  // notrack jmp rax   (CET marks switch jumps)
  EXPECT_EQ(count(scan({0x3e, 0xff, 0xe0}), RefKind::kJumpIndirect), 0u);
}

TEST(stack_scan, RedZoneAndLocalsBelowRbp) {
  // mov [rsp-0x78], al; mov [rbp-0x24], edi
  const BodyFacts f = scan({0x88, 0x44, 0x24, 0x88, 0x89, 0x7d, 0xdc});
  EXPECT_EQ(f.red_zone, 0x78u);
  EXPECT_EQ(f.below_rbp, 0x24u);
  // [rsp+8] is inside the frame: no red zone.
  EXPECT_EQ(scan({0x48, 0x8b, 0x44, 0x24, 0x08}).red_zone, 0u);
}

TEST(stack_scan, StackArgumentsPushedForACall) {
  // push 8; push 7; push 6; call x; add rsp, 24; push 1; call x; add rsp, 8; leave; ret
  const std::vector<uint8_t> code = {0x6a, 0x08, 0x6a, 0x07, 0x6a, 0x06, 0xe8, 0, 0, 0, 0,
                                     0x48, 0x83, 0xc4, 0x18, 0x6a, 0x01, 0xe8, 0, 0, 0, 0,
                                     0x48, 0x83, 0xc4, 0x08, 0xc9, 0xc3};
  EXPECT_EQ(call_argument_bytes(code.data(), code.size(), 0x1000, 0x1000), 24u);
  // sub rsp, 8 (alignment); push 1; call x: 16 bytes at the call.
  const std::vector<uint8_t> odd = {0x48, 0x83, 0xec, 0x08, 0x6a, 0x01, 0xe8, 0, 0, 0, 0};
  EXPECT_EQ(call_argument_bytes(odd.data(), odd.size(), 0x1000, 0x1000), 16u);
}

TEST(stack_scan, SpAtTheFirstCall) {
  // push rbp; push r14; push rbx; mov ebp, edi; call x   (clang -O2 with a hook)
  const std::vector<uint8_t> pushes = {0x55, 0x41, 0x56, 0x53, 0x89, 0xfd, 0xe8, 0, 0, 0, 0};
  EXPECT_EQ(sp_at_first_call(pushes.data(), pushes.size()), 32u);
  // push rbp; mov rbp, rsp; sub rsp, 0x20; call x
  const std::vector<uint8_t> frame = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x20, 0xe8, 0, 0, 0, 0};
  EXPECT_EQ(sp_at_first_call(frame.data(), frame.size()), 48u);
  // A branch before any call: not followed, the return address only.
  const std::vector<uint8_t> branch = {0x55, 0x74, 0x02, 0xe8, 0, 0, 0, 0};
  EXPECT_EQ(sp_at_first_call(branch.data(), branch.size()), 8u);
}

TEST(stack_prologue, ProbedAllocationIsCountedWhole) {
  auto reader = Arch::create(Isa::kX86_64);
  ASSERT_TRUE(reader) << reader.error().message();
  // gcc -O0 -fstack-clash-protection, 64 KiB of locals:
  // push rbp; mov rbp, rsp; lea r11, [rsp-0xf000]; L: sub rsp, 0x1000;
  // or qword [rsp], 0; cmp rsp, r11; jne L; sub rsp, 0xf98
  const std::vector<uint8_t> loop = {0x55, 0x48, 0x89, 0xe5, 0x4c, 0x8d, 0x9c, 0x24, 0x00, 0x10,
                                     0xff, 0xff, 0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00, 0x48,
                                     0x83, 0x0c, 0x24, 0x00, 0x4c, 0x39, 0xdc, 0x75, 0xef, 0x48,
                                     0x81, 0xec, 0x98, 0x0f, 0x00, 0x00, 0x89, 0x7d, 0xfc};
  EXPECT_EQ((*reader)->read_prologue(loop.data(), loop.size(), 0x1000, 0x1000, 8).bytes, 16u + 0xf000 + 0xf98);
  // Unrolled: sub rsp, 0x1000; or qword [rsp], 0; sub rsp, 0xfa0
  const std::vector<uint8_t> unrolled = {0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00, 0x48, 0x83,
                                         0x0c, 0x24, 0x00, 0x48, 0x81, 0xec, 0xa0, 0x0f, 0x00,
                                         0x00, 0x89, 0x7c, 0x24, 0x0c};
  EXPECT_EQ((*reader)->read_prologue(unrolled.data(), unrolled.size(), 0x1000, 0x1000, 8).bytes,
            8u + 0x1000 + 0xfa0);
  // Shrink-wrapping: test edi, edi; je +6; push rbx; sub rsp, 0x20; ...
  const std::vector<uint8_t> wrapped = {0x85, 0xff, 0x74, 0x06, 0x53, 0x48, 0x83, 0xec, 0x20, 0x89, 0x3c, 0x24, 0xc3};
  EXPECT_EQ((*reader)->read_prologue(wrapped.data(), wrapped.size(), 0x1000, 0x1000, 8).bytes, 8u + 8 + 0x20);
  // add rsp, -128 is an allocation, and the body starts after it.
  const std::vector<uint8_t> add = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xc4, 0x80, 0x6a, 0x01};
  const PrologueFrame f = (*reader)->read_prologue(add.data(), add.size(), 0x1000, 0x1000, 8);
  EXPECT_EQ(f.bytes, 16u + 128);
  EXPECT_EQ(f.body_start, 0x1008u);
}

}  // namespace
}  // namespace callscope::stack
