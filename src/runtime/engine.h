// The engine's hot path (profile mode, filtered recording), inlined into the
// hooks: a call whose node is the caller's last child, with no filter flag,
// no event to write and no minimum duration, touches only its frame, its
// node and its caller's frame. Everything else goes to profile.cpp.
//
// The shadow stack has a sentinel frame before its first frame (fn 0, sp
// ~0, node 0): the outermost frame's caller is the root, exits with nothing
// open fail the fn compare, and entries never find it dead.
#pragma once

#include <stdint.h>

#include "runtime/runtime.h"

namespace callscope::rt {

inline constexpr uint32_t kProfStackCapacity = 1u << 16;  // frames (3 MiB, sparse)
inline constexpr uint64_t kProfNoTick = ~uint64_t{0};

// Frame flags of the runtime's own, beside fmt::kProfFrame* (readers of
// t<tid>.prof look at kProfFrameExcluded only). Stop and start (profile.cpp):
inline constexpr uint32_t kFrameStopped = 1u << 16;    // entered while stopped: no node yet, never counted
inline constexpr uint32_t kFrameBanked = 1u << 17;     // stopped: its time up to the pause is in its node
inline constexpr uint32_t kFrameInherited = fmt::kProfFrameInherited;  // entered while stopped, open at the
                                                                        // start: a call from there (inherited)

// The per-thread table of (parent, fn) -> node: open addressing, 0 = empty.
CALLSCOPE_NOINSTR inline uint32_t engine_hash(uint32_t parent, uint64_t fn, uint32_t mask) {
  const uint64_t h = (fn ^ (uint64_t{parent} << 40)) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>(h >> 32) & mask;
}

// profile.cpp
void engine_enter_slow(ThreadState* t, uint64_t fn, uint64_t sp, uint64_t key, uint64_t now);
void engine_exit_slow(ThreadState* t, uint64_t fn, uint64_t site, uint64_t sp, uint64_t now);
// While stopped: the stack kept as the hooks above keep it, nothing counted.
void engine_enter_stopped(ThreadState* t, uint64_t fn, uint64_t site, uint64_t sp);
void engine_exit_stopped(ThreadState* t, uint64_t fn, uint64_t site, uint64_t sp);
uint32_t engine_find_child(ThreadState* t, uint32_t parent, uint64_t fn);

CALLSCOPE_NOINSTR __attribute__((always_inline)) inline void engine_enter_fast(ThreadState* t, uint64_t fn,
                                                                                uint64_t site, uint64_t sp) {
  const uint64_t now = now_tick();
  const uint64_t key = frame_key(sp, site);
  const int32_t top_index = static_cast<int32_t>(t->pdepth) - 1;
  fmt::RawProfFrame* const top = &t->pstack[top_index];
  if (CALLSCOPE_UNLIKELY((top->sp <= sp && entry_finds_dead(top->sp, t->pkey[top_index], sp, key)) ||
                         t->pdepth >= kProfStackCapacity || t->eslow)) {
    engine_enter_slow(t, fn, sp, key, now);
    return;
  }
  const uint32_t parent = top->node;
  // The caller's last child (loops, recursion) first.
  uint32_t node = t->nodes[parent].hint;
  if (CALLSCOPE_UNLIKELY(t->nodes[node].fn != fn)) {
    // A caller that calls several functions in turn: the sibling that came
    // after the last one the previous time, else the table's first probe,
    // else the full lookup. The caller's last child and each child's
    // successor are learned as they go.
    const uint32_t last = node;
    node = t->nodes[last].next;
    if (CALLSCOPE_UNLIKELY(t->nodes[node].fn != fn || node == 0)) {
      node = t->hash[engine_hash(parent, fn, t->hash_mask)];
      if (CALLSCOPE_UNLIKELY(node == 0 || t->nodes[node].fn != fn || t->nodes[node].parent != parent))
        node = engine_find_child(t, parent, fn);
      if (last != 0 && node != 0) t->nodes[last].next = node;
    }
    t->nodes[parent].hint = node;
  }
  if (CALLSCOPE_UNLIKELY(node == 0 || t->nodes[node].flags != 0)) {
    engine_enter_slow(t, fn, sp, key, now);
    return;
  }
  t->pkey[top_index + 1] = key;
  fmt::RawProfFrame* const f = top + 1;
  f->fn = fn;
  f->sp = sp;
  f->tick = now;
  f->child = 0;
  f->node = node;
  f->flags = 0;
  t->prof->depth = ++t->pdepth;
}

CALLSCOPE_NOINSTR __attribute__((always_inline)) inline void engine_exit_fast(ThreadState* t, uint64_t fn,
                                                                               uint64_t site, uint64_t sp) {
  const uint64_t now = now_tick();
  fmt::RawProfFrame* const f = &t->pstack[static_cast<int32_t>(t->pdepth) - 1];
  if (CALLSCOPE_UNLIKELY(f->fn != fn || !exit_closes(f->sp, f[-1].sp, sp, site) || f->flags != 0 ||
                         t->poverflow != 0 || t->eslow)) {
    engine_exit_slow(t, fn, site, sp, now);
    return;
  }
  t->prof->depth = --t->pdepth;
  const uint64_t d = now > f->tick ? now - f->tick : 0;
  fmt::RawProfNode* const n = &t->nodes[f->node];
  if (CALLSCOPE_UNLIKELY(n->calls++ == 0)) {  // the first call (since a clear)
    n->first_tick = f->tick;
    n->first = d;
  }
  n->total += d;
  n->self += d > f->child ? d - f->child : 0;
  if (d < n->min) n->min = d;
  if (d > n->max) n->max = d;
  f[-1].child += d;
}

}  // namespace callscope::rt
