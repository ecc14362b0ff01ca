// -pg and -pg -mfentry (gcc and clang): the entries come from mcount and
// __fentry__ (trampolines.S), the exits from replacing the function's return
// address, as for library calls (libcall.cpp). The trace records each
// function by its first byte where the call's place tells it: __fentry__ is
// called by the function's first instruction (after endbr64), mcount after
// gcc's `push %rbp; mov %rsp,%rbp`; elsewhere (clang's -pg, which pushes
// more first) by the mcount call's own address, inside the function: one
// address per function all the same, symbolized to its name.
#include <stdint.h>
#include <string.h>

#include "runtime/patch/patch.h"
#include "runtime/runtime.h"

extern "C" {
__attribute__((visibility("hidden"), used)) void callscope_rt_fentry_enter(uint64_t ret, uint64_t* slot);
__attribute__((visibility("hidden"), used)) void callscope_rt_mcount_enter(uint64_t ret, uint64_t* slot);
}

namespace callscope::rt {
namespace {

// The address of the call that returns to `ret`: `call rel32` (5 bytes) or
// `call *rel32(%rip)` (6 bytes, gcc's -pg in PIE code).
CALLSCOPE_NOINSTR inline uint64_t call_site(uint64_t ret) {
  const auto* p = reinterpret_cast<const uint8_t*>(ret);
  if (p[-6] == 0xff && p[-5] == 0x15) return ret - 6;
  return ret - 5;
}

CALLSCOPE_NOINSTR inline uint64_t before_endbr(uint64_t a) {
  static const uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
  return memcmp(reinterpret_cast<const void*>(a - 4), kEndbr64, 4) == 0 ? a - 4 : a;
}

}  // namespace
}  // namespace callscope::rt

using namespace callscope::rt;

void callscope_rt_fentry_enter(uint64_t ret, uint64_t* slot) { hijack_enter(before_endbr(call_site(ret)), slot); }

void callscope_rt_mcount_enter(uint64_t ret, uint64_t* slot) {
  uint64_t fn = call_site(ret);
  static const uint8_t kFramePrologue[4] = {0x55, 0x48, 0x89, 0xe5};  // push %rbp; mov %rsp,%rbp
  if (memcmp(reinterpret_cast<const void*>(fn - 4), kFramePrologue, 4) == 0) fn = before_endbr(fn - 4);
  hijack_enter(fn, slot);
}
