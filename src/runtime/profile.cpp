// The engine: profile mode (each thread keeps its call-path tree in the
// process) and recording with filters (include/exclude, depth, minimum
// duration, chrono functions), which needs the same per-path decisions.
//
// A thread's tree lives in t<tid>.prof, MAP_SHARED, so the final state --
// and the frames open at that moment -- survive the death of the process;
// `callscope record` turns it into the last snapshot. Memory follows the
// number of distinct call paths: a node per path, a frame per open call.
//
// Hot path (engine.h, inlined into the hooks): the node of a call is the child of
// the caller's node with the function's address. Each node remembers the
// child it gave last (loops and recursion ask for it again) and each child
// the sibling that followed it; anything else goes through a per-thread
// open-addressing table. The operations on the trees (start, stop, clear,
// snapshots, status) are in operations.cpp. Decisions that depend on
// the function (excluded, chrono, too deep) are taken once, when its node is
// made, and kept in the node's flags.
//
// An excluded frame keeps the node of its caller: its callees hang under the
// caller and its own time stays in the caller's self time, as CAP did.
//
// Start, stop and clear change g_control; each thread acts on it at its next
// hook (control_changed). A thread that makes no call meanwhile has not
// applied a clear yet: a snapshot taken then shows its counts as zero.
//
// A stop keeps the frames: while stopped, the hooks keep the stack as they
// would (dead frames, exits of outer activations) and count nothing; a
// frame that ends then counts as a call up to the pause. The time of the
// frames open at the pause so far is put in their nodes ("banked"), and the
// file shows no open frame, so a snapshot taken while stopped -- also the
// last one, when the program ends stopped -- counts them up to the pause.
// At the start the banked time is taken back out and every frame that went
// on through the pause has its entry moved later by the pause's length:
// the stopped time counts in no frame. Frames entered while stopped get
// their nodes then, and count their time from the start, not as calls.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "format/profile_math.h"
#include "runtime/engine.h"
#include "runtime/engine_state.h"
#include "runtime/filter.h"
#include "runtime/path_buf.h"
#include "runtime/runtime.h"

namespace callscope::rt {

bool g_engine = false;
bool g_profile_mode = false;
uint64_t g_control = 1;  // sequence 0, on
uint32_t g_mode_flags = 0;
uint64_t g_interval_ns = 0;

namespace {

using fmt::RawProfFrame;
using fmt::RawProfHeader;
using fmt::RawProfNode;

constexpr uint32_t kFirstNodes = 4096;           // 320 KiB
constexpr uint32_t kNodesStepMax = 1u << 16;     // grow by at most 5 MiB at a time
constexpr uint32_t kFirstHash = 1u << 13;

uint64_t g_min_ticks = 0;       // calls shorter than this are not counted
uint32_t g_max_depth = 0;       // 0: no limit
bool g_have_chrono = false;     // events only inside chrono subtrees
constexpr uint64_t kPkeyBytes = (uint64_t{kProfStackCapacity} + 1) * 8;  // 512 KiB, sparse

CALLSCOPE_NOINSTR uint64_t prof_bytes(uint64_t nodes) {
  return fmt::kRawProfHeaderSize + uint64_t{kProfStackCapacity} * sizeof(RawProfFrame) + nodes * sizeof(RawProfNode);
}

// Parses "123", "1.5ms", "10us", "2s", "250ns" (no unit: ns); 0 on error.
CALLSCOPE_NOINSTR uint64_t parse_duration_ns(const char* s) {
  if (!s || !*s) return 0;
  double v = 0, scale = 1;
  bool frac = false, digits = false;
  for (; *s; ++s) {
    if (*s >= '0' && *s <= '9') {
      digits = true;
      if (frac) {
        scale /= 10;
        v += (*s - '0') * scale;
      } else {
        v = v * 10 + (*s - '0');
      }
    } else if (*s == '.' && !frac) {
      frac = true;
    } else {
      break;
    }
  }
  if (!digits) return 0;
  double unit = 1;
  if (strcmp(s, "") == 0 || strcmp(s, "ns") == 0) unit = 1;
  else if (strcmp(s, "us") == 0) unit = 1e3;
  else if (strcmp(s, "ms") == 0) unit = 1e6;
  else if (strcmp(s, "s") == 0) unit = 1e9;
  else return 0;
  return static_cast<uint64_t>(v * unit);
}

// Ticks per ns, measured over ~2 ms (only when a minimum duration is set).
CALLSCOPE_NOINSTR double measure_ticks_per_ns() {
  if (!g_use_tsc) return 1.0;
  const uint64_t m0 = mono_ns(), t0 = read_tsc();
  uint64_t m1;
  do m1 = mono_ns();
  while (m1 - m0 < 2'000'000);
  const uint64_t t1 = read_tsc();
  return static_cast<double>(t1 - t0) / static_cast<double>(m1 - m0);
}

// ---- the node table ---------------------------------------------------------

CALLSCOPE_NOINSTR void hash_put(uint32_t* table, uint32_t mask, const RawProfNode* nodes, uint32_t id) {
  uint32_t i = engine_hash(nodes[id].parent, nodes[id].fn, mask);
  while (table[i]) i = (i + 1) & mask;
  table[i] = id;
}

// Doubles the table when it is half full.
CALLSCOPE_NOINSTR bool hash_grow(ThreadState* t) {
  const uint32_t size = (t->hash_mask + 1) * 2;
  auto* table = static_cast<uint32_t*>(map_anon(uint64_t{size} * 4));
  if (!table) return false;
  for (uint32_t id = 1; id < t->node_count; ++id) hash_put(table, size - 1, t->nodes, id);
  ::munmap(t->hash, uint64_t{t->hash_mask + 1} * 4);
  t->hash = table;
  t->hash_mask = size - 1;
  return true;
}

CALLSCOPE_NOINSTR bool grow_nodes(ThreadState* t) {
  if (t->node_capacity >= kMaxNodes) return false;
  uint32_t step = t->node_capacity == 0 ? kFirstNodes
                  : t->node_capacity < kNodesStepMax ? t->node_capacity : kNodesStepMax;
  if (t->node_capacity + step > kMaxNodes) step = kMaxNodes - t->node_capacity;
  const uint64_t from = prof_bytes(t->node_capacity), bytes = uint64_t{step} * sizeof(RawProfNode);
  if (::fallocate(t->prof_fd, 0, static_cast<off_t>(from), static_cast<off_t>(bytes)) != 0 &&
      ((errno != EOPNOTSUPP && errno != ENOSYS) ||
       ::ftruncate(t->prof_fd, static_cast<off_t>(from + bytes)) != 0))
    return false;
  t->node_capacity += step;
  t->prof->node_capacity = t->node_capacity;
  return true;
}

// A new node under `parent`; 0 when the table is full.
CALLSCOPE_NOINSTR uint32_t new_node(ThreadState* t, uint32_t parent, uint64_t fn) {
  if (t->node_count == t->node_capacity && !grow_nodes(t)) return 0;
  if ((t->node_count + 1) * 2 > t->hash_mask + 1 && !hash_grow(t)) return 0;
  const uint32_t id = t->node_count;
  RawProfNode& n = t->nodes[id];
  n.fn = fn;
  n.parent = parent;
  n.hint = 0;
  n.next = 0;
  fmt::reset_node_stats(n);
  n.depth = t->nodes[parent].depth + 1;
  n.flags = filter_flags(fn);
  if (g_max_depth && n.depth > g_max_depth) n.flags |= fmt::kProfNodeExcluded;
  t->node_count = id + 1;
  __atomic_store_n(&t->prof->node_count, uint64_t{id} + 1, __ATOMIC_RELEASE);
  hash_put(t->hash, t->hash_mask, t->nodes, id);
  return id;
}

}  // namespace

uint32_t engine_find_child(ThreadState* t, uint32_t parent, uint64_t fn) {
  uint32_t i = engine_hash(parent, fn, t->hash_mask);
  uint32_t id;
  while ((id = t->hash[i]) != 0) {
    if (t->nodes[id].fn == fn && t->nodes[id].parent == parent) break;
    i = (i + 1) & t->hash_mask;
  }
  if (id == 0) id = new_node(t, parent, fn);
  if (id) t->nodes[parent].hint = id;
  return id;
}

bool engine_emitting(const ThreadState* t) { return g_have_chrono ? t->chrono_depth != 0 : !g_profile_mode; }

bool env_true(const char* name) {
  const char* v = setting(name);
  if (!v) return false;
  return strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "on") == 0;
}

void* map_anon(uint64_t bytes) {
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return m == MAP_FAILED ? nullptr : m;
}

namespace {

// ---- frames -------------------------------------------------------------------

// Whether every call of this thread needs the slow path now.
CALLSCOPE_NOINSTR inline void update_eslow(ThreadState* t) {
  t->eslow = engine_emitting(t) || g_min_ticks != 0;
}

// Takes back an entry event that was the last thing written, for a call
// shorter than the minimum duration. Nested hooks (a signal handler) that
// write meanwhile find `end` closed and count their events as lost.
CALLSCOPE_NOINSTR bool rewind_entry(ThreadState* t, uint64_t emit_end) {
  if (t->nested) return false;
  uint64_t* const soft_end = t->end;
  t->end = nullptr;
  signal_fence();
  uint64_t* expected = reinterpret_cast<uint64_t*>(emit_end);
  const bool ok = __atomic_compare_exchange_n(&t->pos, &expected, expected - 2, false, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED);
  if (ok) {
    expected[-2] = 0;
    expected[-1] = 0;
  }
  signal_fence();
  t->end = soft_end;
  return ok;
}

// Counts frame f, just taken off the stack, as ended at `now`.
CALLSCOPE_NOINSTR void count_frame(ThreadState* t, const RawProfFrame& f, uint64_t now) {
  RawProfFrame* parent = &t->pstack[static_cast<int32_t>(t->pdepth) - 1];  // the sentinel at depth 0
  if (f.flags & fmt::kProfFrameExcluded) {
    parent->child += f.child;
    return;
  }
  const uint64_t d = now > f.tick ? now - f.tick : 0;
  if (d < g_min_ticks) return;  // not counted: its time stays in the caller's self
  RawProfNode& n = t->nodes[f.node];
  n.total += d;
  n.self += d > f.child ? d - f.child : 0;
  parent->child += d;
  // A frame begun while stopped is a call from the start on, as a recording
  // counts it (analysis/stats.h): avg never exceeds max.
  if (f.flags & kFrameInherited) ++n.inherited;
  ++n.calls;
  if (d < n.min) n.min = d;
  if (d > n.max) n.max = d;
  if (n.first_tick == kProfNoTick) {
    n.first_tick = f.tick;
    n.first = d;
  }
}

// Closes the top frame at `now`. kind: how its event ends it.
CALLSCOPE_NOINSTR void close_frame(ThreadState* t, uint64_t now, fmt::RawKind kind) {
  const RawProfFrame f = t->pstack[--t->pdepth];
  t->prof->depth = t->pdepth;
  if (f.flags & fmt::kProfFrameEmitted) {
    const uint64_t d = now > f.tick ? now - f.tick : 0;
    if (!(kind == fmt::RawKind::kExit && d < g_min_ticks && f.emit_end && rewind_entry(t, f.emit_end)))
      emit1(t, kind, now);
  }
  if (f.flags & fmt::kProfFrameChrono) {
    --t->chrono_depth;
    update_eslow(t);
  }
  count_frame(t, f, now);
}

CALLSCOPE_NOINSTR __attribute__((noinline)) void close_dead(ThreadState* t, uint64_t sp, uint64_t key, uint64_t now) {
  while (t->pdepth != 0 && entry_finds_dead(t->pstack[t->pdepth - 1].sp, t->pkey[t->pdepth - 1], sp, key))
    close_frame(t, now, fmt::RawKind::kExitUnwound);
}

CALLSCOPE_NOINSTR __attribute__((noinline)) void match_exit(ThreadState* t, uint64_t fn, uint64_t site, uint64_t sp,
                                                              uint64_t now) {
  const int64_t match = exit_frame_index(t->pstack, t->pdepth, fn, sp, exit_is_tail(sp, site));
  if (match < 0) return;  // its entry was not seen (started, or cleared, since)
  while (static_cast<int64_t>(t->pdepth) - 1 > match) close_frame(t, now, fmt::RawKind::kExitUnwound);
  close_frame(t, now, fmt::RawKind::kExit);
}

// Applies a callscope_clear() this thread has not seen yet. The time a
// stopped thread banked goes with the counts.
CALLSCOPE_NOINSTR void apply_clear(ThreadState* t) {
  const uint64_t seq = __atomic_load_n(&g_clear_seq, __ATOMIC_ACQUIRE);
  if (!t->prof || t->prof->clear_seq == seq) return;
  for (uint32_t i = 0; i < t->node_count; ++i) fmt::reset_node_stats(t->nodes[i]);
  for (uint32_t i = 0; i < t->pdepth; ++i) {
    RawProfFrame& f = t->pstack[i];
    if (f.tick < g_clear_tick) f.tick = g_clear_tick;
    f.child = 0;
    if (f.flags & kFrameBanked) {
      f.flags &= ~kFrameBanked;
      t->nodes[f.node].flags &= ~fmt::kProfNodeOpen;
    }
  }
  t->prof->dropped_calls = 0;
  t->prof->clear_seq = seq;
}

// ---- stop and start -------------------------------------------------------------

constexpr uint64_t kBankBytes = uint64_t{kProfStackCapacity} * 16;  // 1 MiB, sparse

// At the pause: the time of every open frame so far goes into its node as a
// snapshot would count it (fmt::add_open_time, up to the pause), and what
// it added is kept per frame (pbank: total, self) to be taken back out.
CALLSCOPE_NOINSTR void bank_open_frames(ThreadState* t) {
  if (!t->pbank) t->pbank = static_cast<uint64_t*>(map_anon(kBankBytes));
  if (!t->pbank) return;  // snapshots while stopped then leave out the calls in progress
  const uint64_t pause = t->pause_tick;
  uint64_t above = 0;
  for (uint32_t i = t->pdepth; i-- > 0;) {
    RawProfFrame& f = t->pstack[i];
    const uint64_t el = pause > f.tick ? pause - f.tick : 0;
    if (f.flags & fmt::kProfFrameExcluded) {
      above += f.child;
      continue;
    }
    const uint64_t below = f.child + above;
    const uint64_t self = el > below ? el - below : 0;
    RawProfNode& n = t->nodes[f.node];
    n.total += el;
    n.self += self;
    n.flags |= fmt::kProfNodeOpen;
    t->pbank[2 * i] = el;
    t->pbank[2 * i + 1] = self;
    f.flags |= kFrameBanked;
    above = el;
  }
}

CALLSCOPE_NOINSTR void unbank(ThreadState* t, uint32_t i) {
  RawProfFrame& f = t->pstack[i];
  RawProfNode& n = t->nodes[f.node];
  n.total -= t->pbank[2 * i];
  n.self -= t->pbank[2 * i + 1];
  n.flags &= ~fmt::kProfNodeOpen;
  f.flags &= ~kFrameBanked;
}

// While stopped: the top frame ends. One entered before the pause is a call
// that ended inside it, counted up to the pause (as record mode shows it);
// one entered while stopped is nothing. No event: the pause's end tells the
// reader which frames ended inside it.
CALLSCOPE_NOINSTR void close_stopped(ThreadState* t) {
  const uint32_t i = --t->pdepth;
  const RawProfFrame f = t->pstack[i];
  if (f.flags & kFrameStopped) return;
  if (f.flags & kFrameBanked) unbank(t, i);
  if (f.flags & fmt::kProfFrameChrono) --t->chrono_depth;
  count_frame(t, f, t->pause_tick);
}

// The pause begins at `tick` (the stop's; a thread that began while
// stopped: its start): the frames stay, banked.
CALLSCOPE_NOINSTR void engine_pause(ThreadState* t, uint64_t tick) {
  if (tick < t->prof->start_tick) tick = t->prof->start_tick;
  t->status = kStopped;
  t->pause_written = engine_emitting(t) ? 1 : 0;
  if (t->pause_written) emit1(t, fmt::RawKind::kPause, tick);
  // Calls entered between the stop and this hook began before the pause.
  if (t->pdepth && t->pstack[t->pdepth - 1].tick > tick) tick = t->pstack[t->pdepth - 1].tick;
  t->pause_tick = tick;
  bank_open_frames(t);
  t->prof->depth = 0;
}

CALLSCOPE_NOINSTR bool emitted_frame(const ThreadState* t, uint32_t i, Frame* out) {
  const RawProfFrame& f = t->pstack[i];
  if (!(f.flags & fmt::kProfFrameEmitted)) return false;
  *out = Frame{f.fn, f.sp, f.tick, 0};
  return true;
}

// The node and frame flags of a call of fn under the node `parent`, as an
// entry finds them (a full table: counted in the caller).
CALLSCOPE_NOINSTR uint32_t frame_node(ThreadState* t, uint32_t parent, uint64_t fn, uint32_t* flags) {
  uint32_t node = t->nodes[parent].hint;
  if (t->nodes[node].fn != fn) node = engine_find_child(t, parent, fn);
  if (CALLSCOPE_UNLIKELY(node == 0)) {  // the table is full
    ++t->prof->dropped_calls;
    *flags |= fmt::kProfFrameExcluded;
    return parent;
  }
  const uint32_t nf = t->nodes[node].flags;
  if (CALLSCOPE_UNLIKELY(nf != 0)) {
    if (nf & fmt::kProfNodeChrono) {
      *flags |= fmt::kProfFrameChrono;
      ++t->chrono_depth;
      update_eslow(t);
    }
    if (nf & fmt::kProfNodeExcluded) {
      *flags |= fmt::kProfFrameExcluded;
      node = parent;
    }
  }
  return node;
}

// The pause ends at `start`.
CALLSCOPE_NOINSTR void engine_resume(ThreadState* t, uint64_t start) {
  const uint64_t pause = t->pause_tick;
  if (start < pause) start = pause;
  t->status = kEngine;
  // Frames entered while stopped get their nodes and flags, as if entered
  // now, outermost first; the chrono regions are counted again.
  t->chrono_depth = 0;
  bool emits = false;
  for (uint32_t i = 0; i < t->pdepth; ++i) {
    RawProfFrame& f = t->pstack[i];
    if (f.flags & kFrameStopped) {
      uint32_t flags = kFrameStopped;
      f.node = frame_node(t, t->pstack[static_cast<int32_t>(i) - 1].node, f.fn, &flags);
      if (!(flags & fmt::kProfFrameExcluded)) {
        flags |= kFrameInherited;
        if (engine_emitting(t)) flags |= fmt::kProfFrameEmitted;
      }
      if (g_min_ticks) flags |= fmt::kProfFrameMin;
      f.flags = flags;
    } else if (f.flags & fmt::kProfFrameChrono) {
      ++t->chrono_depth;
    }
    f.emit_end = 0;  // nothing to take back after a pause
    if (f.flags & fmt::kProfFrameEmitted) emits = true;
  }
  update_eslow(t);
  // The stream: the frames in it, with their own entry ticks (the reader
  // matches them with the frames open at the pause), then kResume.
  if (t->pause_written || emits) {
    if (!t->pause_written) emit1(t, fmt::RawKind::kPause, pause);  // no event was due at the pause
    emit_resume(t, start, t->pdepth, emitted_frame);
  }
  t->pause_written = 0;
  // The time: what was banked comes back out of the nodes; a frame that
  // goes on through the pause has its entry moved later by the pause's
  // length, one entered while stopped (or cleared since the pause) counts
  // from the start.
  for (uint32_t i = 0; i < t->pdepth; ++i) {
    RawProfFrame& f = t->pstack[i];
    if (f.flags & kFrameBanked) unbank(t, i);
    if (!(f.flags & kFrameStopped) && f.tick <= pause)
      f.tick += start - pause;
    else if (f.tick < start)
      f.tick = start;
    f.flags &= ~kFrameStopped;
  }
  t->prof->depth = t->pdepth;
}

CALLSCOPE_NOINSTR bool open_prof_file(ThreadState* t) {
  PathBuf name;
  int fd = -1;
  for (unsigned attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    name.clear();
    name.add("t").add_uint(t->tid);
    if (attempt) name.add(".").add_uint(attempt);
    name.add(".prof");
    fd = process_dir_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return false;
  }
  if (fd < 0) return false;
  // The header and the stack are sparse until touched; nodes get real blocks.
  // On failure no file is left behind (a tree file without a header reads
  // as damage); errno says why, for the untraced-thread record.
  auto fail = [&] {
    const int e = errno;
    ::close(fd);
    process_dir_unlink(name.c_str());
    errno = e;
    return false;
  };
  if (::ftruncate(fd, static_cast<off_t>(prof_bytes(0))) != 0 ||
      ::fallocate(fd, 0, 0, static_cast<off_t>(fmt::kRawProfHeaderSize)) != 0) {
    if (errno != EOPNOTSUPP && errno != ENOSYS) return fail();
  }
  void* m = ::mmap(nullptr, prof_bytes(kMaxNodes), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (m == MAP_FAILED) return fail();
  auto* h = static_cast<RawProfHeader*>(m);
  t->prof_fd = fd;
  t->prof = h;
  t->pstack = reinterpret_cast<RawProfFrame*>(static_cast<char*>(m) + fmt::kRawProfHeaderSize);
  // The sentinel frame, at the end of the header page (engine.h).
  memset(&t->pstack[-1], 0, sizeof(RawProfFrame));
  t->pstack[-1].sp = ~uint64_t{0};
  t->nodes = reinterpret_cast<RawProfNode*>(static_cast<char*>(m) + prof_bytes(0));
  t->node_capacity = 0;
  t->node_count = 0;
  t->pdepth = 0;
  t->poverflow = 0;
  t->chrono_depth = 0;
  update_eslow(t);
  memcpy(h->magic, fmt::kRawProfMagic, sizeof h->magic);
  h->version = fmt::kRawVersion;
  h->header_size = fmt::kRawProfHeaderSize;
  h->pid = static_cast<uint32_t>(::getpid());
  h->tid = t->tid;
  h->nodes_offset = prof_bytes(0);
  h->stack_offset = fmt::kRawProfHeaderSize;
  h->stack_capacity = kProfStackCapacity;
  h->start_tick = now_tick();
  h->flags = (h->pid == h->tid) ? fmt::kRawThreadMain : 0;
  h->clear_seq = __atomic_load_n(&g_clear_seq, __ATOMIC_ACQUIRE);
  h->switches_seen = t->switches_seen;
  t->hash = static_cast<uint32_t*>(map_anon(uint64_t{kFirstHash} * 4));
  t->hash_mask = kFirstHash - 1;
  // The frames' keys (engine.h): anonymous, the sentinel's first. A fork
  // child keeps its parent's (engine_reset_after_fork).
  if (!t->pkey) {
    auto* keys = static_cast<uint64_t*>(map_anon(kPkeyBytes));
    if (keys) t->pkey = keys + 1;
  }
  if (!t->hash || !t->pkey || !grow_nodes(t)) return false;
  // The root.
  RawProfNode& root = t->nodes[0];
  memset(&root, 0, sizeof root);
  fmt::reset_node_stats(root);
  t->node_count = 1;
  __atomic_store_n(&h->node_count, 1, __ATOMIC_RELEASE);
  return true;
}

}  // namespace

// ---- configuration and thread lifecycle ------------------------------------

}  // namespace callscope::rt
// libcallscope-mem.so's, when record --memory preloads it (mem_unwind.h).
extern "C" int callscope_mem_unwind_mode() __attribute__((weak));
namespace callscope::rt {

void engine_configure() {
  const char* mode = setting("CALLSCOPE_MODE");
  g_profile_mode = mode && strcmp(mode, "profile") == 0;
  filter_configure();
  g_have_chrono = filter_has_chrono();
  if (const char* d = setting("CALLSCOPE_MAX_DEPTH")) g_max_depth = static_cast<uint32_t>(::atoi(d));
  if (const uint64_t ns = parse_duration_ns(setting("CALLSCOPE_MIN_DURATION")))
    g_min_ticks = static_cast<uint64_t>(static_cast<double>(ns) * measure_ticks_per_ns());
  g_interval_ns = parse_duration_ns(setting("CALLSCOPE_INTERVAL"));
  const bool filtered = filter_active() || g_max_depth || g_min_ticks;
  g_engine = g_profile_mode || filtered;
  if (g_engine) hooks_use_engine();
  if (filtered) g_mode_flags |= fmt::kRawModeFiltered;
  if (callscope_mem_unwind_mode && callscope_mem_unwind_mode() != 0) {
    g_mode_flags |= fmt::kRawModeUnwound;  // the frames are libcallscope-mem.so's (mem_unwind.h)
    if (!g_engine) hooks_ignore();
  }
  if (env_true("CALLSCOPE_START_OFF")) {  // stopped from the beginning: threads start paused
    g_control = 0;
    g_switches = 1;
    g_switch_ticks[1] = 0;
    g_mode_flags |= fmt::kRawModeStartOff;
  }
}

void engine_write_mode() {
  fmt::RawMode m{};
  m.mode = static_cast<uint32_t>(g_profile_mode ? fmt::TraceMode::kProfile : fmt::TraceMode::kRecord);
  m.flags = g_mode_flags;
  write_meta(fmt::RawMetaType::kMode, &m, sizeof m, nullptr, 0, nullptr, 0);
  if (g_switches) {  // --start-off: the stop before the first call
    const fmt::RawSwitch rec{1, g_switch_ticks[1]};
    write_meta(fmt::RawMetaType::kSwitch, &rec, sizeof rec, nullptr, 0, nullptr, 0);
  }
}

void engine_release_prof(fmt::RawProfHeader* prof) {
  ::mmap(prof, prof_bytes(kMaxNodes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
         -1, 0);
}

bool engine_thread_init(ThreadState* t) {
  t->prof = nullptr;
  t->prof_fd = -1;
  if (g_engine && !open_prof_file(t)) return false;
  register_thread(t);
  return true;
}

void engine_thread_exit(ThreadState* t) {
  unregister_thread(t);
  if (!t->prof) return;
  t->prof->end_tick = now_tick();
  if (t->header) memcpy(t->prof->name, t->header->name, sizeof t->prof->name);
  // The mapping stays: later snapshots include this thread's tree.
  if (t->hash) ::munmap(t->hash, uint64_t{t->hash_mask + 1} * 4);
  t->hash = nullptr;
  if (t->pkey) ::munmap(t->pkey - 1, kPkeyBytes);
  t->pkey = nullptr;
  if (t->pbank) ::munmap(t->pbank, kBankBytes);
  t->pbank = nullptr;
  // The tree no longer grows: its file needs no descriptor (a server that
  // starts a thread per request would run out of them).
  if (t->prof_fd >= 0) ::close(t->prof_fd);
  t->prof_fd = -1;
}

// In a fork child: a tree of its own, starting empty; the frames inherited
// from the parent stay open but are not counted (their calls began there).
// A fork child that is not traced (record --follow): the copy of the
// parent's tree is not its own to write.
void engine_drop_after_fork(ThreadState* t) {
  if (!t->prof) return;
  if (t->hash) ::munmap(t->hash, uint64_t{t->hash_mask + 1} * 4);
  ::munmap(t->prof, prof_bytes(kMaxNodes));
  ::close(t->prof_fd);
  t->prof = nullptr;
  t->hash = nullptr;
  t->prof_fd = -1;
}

void engine_reset_after_fork(ThreadState* t) {
  operations_reset_after_fork();
  if (t->status != kEngine && t->status != kStopped && t->status != kActive) return;
  if (t->prof) {
    RawProfFrame saved[64];
    const uint32_t depth = t->pdepth < 64 ? t->pdepth : 64;
    memcpy(saved, t->pstack + (t->pdepth - depth), depth * sizeof(RawProfFrame));
    memmove(t->pkey, t->pkey + (t->pdepth - depth), depth * sizeof(uint64_t));  // the copy of the parent's
    if (t->hash) ::munmap(t->hash, uint64_t{t->hash_mask + 1} * 4);
    ::munmap(t->prof, prof_bytes(kMaxNodes));
    ::close(t->prof_fd);
    t->prof = nullptr;
    t->hash = nullptr;
    if (!open_prof_file(t)) {
      t->status = kDisabled;
      return;
    }
    for (uint32_t i = 0; i < depth; ++i) {
      saved[i].node = 0;
      saved[i].flags = fmt::kProfFrameExcluded;
      t->pstack[i] = saved[i];
    }
    t->pdepth = depth;
    t->prof->depth = depth;
    t->pause_written = 0;  // none of them is in the child's stream
  }
  register_thread(t);
}

// ---- hooks --------------------------------------------------------------------

// Any entry the fast path does not take: dead frames to close, a full
// stack, a new path, a node with filter flags, events to write.
void engine_enter_slow(ThreadState* t, uint64_t fn, uint64_t sp, uint64_t key, uint64_t now) {
  if (CALLSCOPE_UNLIKELY(filter_decide_skip(fn))) return;  // left out: no frame (hooks.cpp)
  if (CALLSCOPE_UNLIKELY(t->pdepth != 0 && t->pstack[t->pdepth - 1].sp <= sp) && t->poverflow == 0 &&
      entry_finds_dead(t->pstack[t->pdepth - 1].sp, t->pkey[t->pdepth - 1], sp, key))
    close_dead(t, sp, key, now);
  if (CALLSCOPE_UNLIKELY(t->poverflow != 0 || t->pdepth >= kProfStackCapacity)) {
    ++t->poverflow;
    return;
  }
  uint32_t flags = 0;
  const uint32_t node = frame_node(t, t->pstack[static_cast<int32_t>(t->pdepth) - 1].node, fn, &flags);
  RawProfFrame& f = t->pstack[t->pdepth];
  f.emit_end = 0;
  if (CALLSCOPE_UNLIKELY(engine_emitting(t)) && !(flags & fmt::kProfFrameExcluded)) {
    emit_entry(t, fmt::RawKind::kEntry, now, fn, sp);
    f.emit_end = reinterpret_cast<uint64_t>(t->pos);
    flags |= fmt::kProfFrameEmitted;
  }
  if (g_min_ticks) flags |= fmt::kProfFrameMin;
  t->pkey[t->pdepth] = key;
  f.fn = fn;
  f.sp = sp;
  f.tick = now;
  f.child = 0;
  f.node = node;
  f.flags = flags;
  ++t->pdepth;
  t->prof->depth = t->pdepth;
}

void engine_exit_slow(ThreadState* t, uint64_t fn, uint64_t site, uint64_t sp, uint64_t now) {
  if (CALLSCOPE_UNLIKELY(t->poverflow != 0)) {
    --t->poverflow;
    return;
  }
  if (CALLSCOPE_LIKELY(t->pdepth != 0)) {
    const RawProfFrame& top = t->pstack[t->pdepth - 1];
    if (CALLSCOPE_LIKELY(top.fn == fn && exit_closes(top.sp, (&top)[-1].sp, sp, site))) {
      close_frame(t, now, fmt::RawKind::kExit);
      return;
    }
  }
  match_exit(t, fn, site, sp, now);
}

void engine_enter_stopped(ThreadState* t, uint64_t fn, uint64_t site, uint64_t sp) {
  if (CALLSCOPE_UNLIKELY(filter_decide_skip(fn))) return;
  const uint64_t now = now_tick();  // tells it from a frame that ended at its place during the pause
  const uint64_t key = frame_key(sp, site);
  if (t->pdepth != 0 && t->poverflow == 0 && t->pstack[t->pdepth - 1].sp <= sp)
    while (t->pdepth != 0 && entry_finds_dead(t->pstack[t->pdepth - 1].sp, t->pkey[t->pdepth - 1], sp, key))
      close_stopped(t);
  if (t->poverflow != 0 || t->pdepth >= kProfStackCapacity) {
    ++t->poverflow;
    return;
  }
  t->pkey[t->pdepth] = key;
  RawProfFrame& f = t->pstack[t->pdepth];
  f.fn = fn;
  f.sp = sp;
  f.tick = now;
  f.child = 0;
  f.emit_end = 0;
  f.node = 0;
  f.flags = kFrameStopped;
  ++t->pdepth;  // the file shows no open frame while stopped
}

void engine_exit_stopped(ThreadState* t, uint64_t fn, uint64_t site, uint64_t sp) {
  if (t->poverflow != 0) {
    --t->poverflow;
    return;
  }
  if (t->pdepth != 0) {
    const RawProfFrame& top = t->pstack[t->pdepth - 1];
    if (top.fn == fn && exit_closes(top.sp, (&top)[-1].sp, sp, site)) {
      close_stopped(t);
      return;
    }
  }
  const int64_t match = exit_frame_index(t->pstack, t->pdepth, fn, sp, exit_is_tail(sp, site));
  if (match < 0) return;
  while (static_cast<int64_t>(t->pdepth) - 1 > match) close_stopped(t);
  close_stopped(t);
}

void control_changed(ThreadState* t) {
  const int saved_errno = errno;
  t->control_seen = control_word();
  if (t->prof) apply_clear(t);
  // Every stop and start since the last one this thread saw, in order: one
  // asleep through a stop and a start pauses from the one to the other.
  const uint64_t switches = switches_now();
  for (uint64_t k = first_switch_to_act_on(t->switches_seen, switches); k <= switches; ++k) {
    const uint64_t tick = switch_tick(k);
    if (k & 1) {
      if (g_engine)
        engine_pause(t, tick);
      else
        record_pause(t, tick);
    } else {
      if (g_engine)
        engine_resume(t, tick);
      else
        record_resume(t, tick);
    }
  }
  set_switches_seen(t, switches);
  errno = saved_errno;
}

void control_catch_up(ThreadState* t) {
  if (t->in_hook || (t->status != kActive && t->status != kEngine && t->status != kStopped)) return;
  if (control_word() == t->control_seen) return;
  t->in_hook = 1;
  signal_fence();
  control_changed(t);
  signal_fence();
  t->in_hook = 0;
}

}  // namespace callscope::rt
