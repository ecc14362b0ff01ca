// The operations on a traced process -- start, stop, clear, snapshots,
// status and marks -- behind the public API (include/callscope/callscope.h)
// and the control socket (control.cpp), and the registry of threads they
// reach. The engine (profile.cpp) owns the trees; this file reads them and
// tells each thread, through its gate, that something changed.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format/ctl_dir.h"
#include "format/profile_math.h"
#include "runtime/control.h"
#include "runtime/engine_state.h"
#include "runtime/patch/patch.h"
#include "runtime/runtime.h"

namespace callscope::rt {

pthread_mutex_t g_op_lock = PTHREAD_MUTEX_INITIALIZER;
uint64_t g_clear_seq = 0;
uint64_t g_clear_tick = 0;
uint64_t g_switches = 0;
uint64_t g_switch_ticks[kSwitchHistory] = {};

namespace {
uint32_t g_mark_id = 0;
}  // namespace

CALLSCOPE_NOINSTR uint32_t next_mark_id() { return __atomic_add_fetch(&g_mark_id, 1, __ATOMIC_RELAXED); }

namespace {

using fmt::RawProfFrame;
using fmt::RawProfHeader;
using fmt::RawProfNode;


// Every thread of the process, for snapshots and status. Entries of exited
// threads stay: their trees are part of every later snapshot.
struct Reg {
  RawProfHeader* prof;          // engine threads: mapped for the life of the process
  fmt::RawThreadHeader* th;     // valid while `alive`
  ThreadState* ts;              // valid while `alive` (its TLS), to poke it
  uint32_t tid;
  uint32_t alive;
};
constexpr uint32_t kMaxReg = 1u << 16;
Reg* g_reg = nullptr;
uint32_t g_reg_count = 0;
uint32_t g_threads_started = 0;
pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;

pthread_mutex_t g_dump_lock = PTHREAD_MUTEX_INITIALIZER;
int g_dump_fd = -1;
uint32_t g_dumps_written = 0;  // by this process (status)
// The session's count of snapshots, one numbering for all its processes
// (what `ctl dump` answers is what `report --dump K` takes): a word of
// <session>/snapshots.seq, mapped shared; a fork child inherits the mapping,
// an exec'd image maps it again.
uint32_t* g_snapshot_count = nullptr;
constexpr uint64_t kCounterBytes = 4096;

}  // namespace

void register_thread(ThreadState* t) {
  ::pthread_mutex_lock(&g_reg_lock);
  ++g_threads_started;
  if (!g_reg) g_reg = static_cast<Reg*>(map_anon(uint64_t{kMaxReg} * sizeof(Reg)));
  bool registered = false;
  if (g_reg && g_reg_count < kMaxReg) {
    g_reg[g_reg_count] = Reg{t->prof, t->header, t, t->tid, 1};
    __atomic_store_n(&g_reg_count, g_reg_count + 1, __ATOMIC_RELEASE);
    registered = true;
  } else if (g_reg && !t->prof) {
    // Full: reuse the entry of a thread that has ended and left no tree.
    for (uint32_t i = 0; i < g_reg_count && !registered; ++i) {
      if (g_reg[i].alive || g_reg[i].prof) continue;
      g_reg[i] = Reg{t->prof, t->header, t, t->tid, 1};
      registered = true;
    }
  }
  // A thread nobody can poke takes the slow path at every hook, which looks
  // at g_control itself (slower, but start and stop still reach it).
  t->gate_pad = registered ? 0 : 1;
  ::pthread_mutex_unlock(&g_reg_lock);
}

void unregister_thread(ThreadState* t) {
  ::pthread_mutex_lock(&g_reg_lock);
  for (uint32_t i = g_reg_count; i-- > 0;) {
    if (g_reg[i].alive && g_reg[i].tid == t->tid) {
      g_reg[i].alive = 0;
      g_reg[i].th = nullptr;
      g_reg[i].ts = nullptr;
      break;
    }
  }
  ::pthread_mutex_unlock(&g_reg_lock);
}

// After g_control changed: every live thread's next hook takes the slow
// path and looks at it. Under the registry lock, so no thread's TLS goes
// away meanwhile (a thread unregisters before its TLS is freed).
namespace {

CALLSCOPE_NOINSTR void poke_threads() {
  ::pthread_mutex_lock(&g_reg_lock);
  for (uint32_t i = 0; i < g_reg_count; ++i)
    if (g_reg[i].alive && g_reg[i].ts) __atomic_store_n(&g_reg[i].ts->poked, 1, __ATOMIC_SEQ_CST);
  ::pthread_mutex_unlock(&g_reg_lock);
}

// ---- snapshots ------------------------------------------------------------

// A snapshot's copy of one thread: its nodes as of now, with a clear it has
// not applied yet taken into account and the time of its open calls so far.
CALLSCOPE_NOINSTR uint64_t copy_thread(const RawProfHeader* h, RawProfNode* out, uint64_t count, uint64_t now) {
  const auto* nodes = reinterpret_cast<const RawProfNode*>(reinterpret_cast<const char*>(h) + h->nodes_offset);
  memcpy(out, nodes, count * sizeof(RawProfNode));
  const bool pending_clear = h->clear_seq != __atomic_load_n(&g_clear_seq, __ATOMIC_ACQUIRE);
  if (pending_clear)
    for (uint64_t i = 0; i < count; ++i) fmt::reset_node_stats(out[i]);
  const auto* stack = reinterpret_cast<const RawProfFrame*>(reinterpret_cast<const char*>(h) + h->stack_offset);
  uint32_t depth = __atomic_load_n(&h->depth, __ATOMIC_ACQUIRE);
  if (depth > h->stack_capacity) depth = h->stack_capacity;
  fmt::add_open_time(out, count, stack, depth, now, pending_clear ? g_clear_tick : 0);
  return count;
}

CALLSCOPE_NOINSTR bool write_all(int fd, const void* p, uint64_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<uint64_t>(w);
  }
  return true;
}

}  // namespace

void operations_reset_after_fork() {
  // Other threads do not exist here; the parent's trees are the parent's.
  // (The snapshot counter is the session's: shared with the parent still.)
  g_reg_count = 0;
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_reg_lock = fresh;
  g_dump_lock = fresh;
  g_op_lock = fresh;
  g_dump_fd = -1;
  g_dumps_written = 0;
}

void dumps_prepare() {
  if (!g_profile_mode) return;
  ::pthread_mutex_lock(&g_dump_lock);
  if (g_dump_fd < 0) g_dump_fd = process_dir_open("dumps", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (!g_snapshot_count) {
    const int fd = session_dir_open("snapshots.seq", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat st;
    // Made by the first process that needs it; the others find it sized.
    if (fd >= 0 && ::fstat(fd, &st) == 0 && (st.st_size >= 4 || ::ftruncate(fd, 4) == 0)) {
      void* p = ::mmap(nullptr, kCounterBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) g_snapshot_count = static_cast<uint32_t*>(p);
    }
    if (fd >= 0) ::close(fd);
  }
  ::pthread_mutex_unlock(&g_dump_lock);
}

// ---- operations ---------------------------------------------------------------

namespace {

// A stop or a start: its tick in the history, then the count of switches,
// then g_control (what makes hooks look). Its parity is the on bit's opposite.
CALLSCOPE_NOINSTR void switch_to(bool on) {
  ::pthread_mutex_lock(&g_op_lock);
  const uint64_t w = g_control;
  if (((w & 1) != 0) != on) {
    const uint64_t k = g_switches + 1;
    const uint64_t tick = now_tick();
    g_switch_ticks[k % kSwitchHistory] = tick;
    // For the reader: a thread that makes no call from here to the end of
    // the process never acts on this switch (RawThreadHeader::switches_seen).
    const fmt::RawSwitch rec{k, tick};
    write_meta(fmt::RawMetaType::kSwitch, &rec, sizeof rec, nullptr, 0, nullptr, 0);
    __atomic_store_n(&g_switches, k, __ATOMIC_RELEASE);
    __atomic_store_n(&g_control, (((w >> 1) + 1) << 1) | (on ? 1 : 0), __ATOMIC_SEQ_CST);
  }
  ::pthread_mutex_unlock(&g_op_lock);
  poke_threads();
  code_patch_sync();  // patchable entries: calls while on, nops while off
}

// Where a snapshot ends the open calls of a thread that has seen `seen` of
// the stops and starts (~0: a thread that has ended). A thread that is
// stopped shows none (control_changed banked their time up to its pause).
// One that has not seen the latest stops (it made no call since) has every
// open frame from before them: the paused time since is taken out.
CALLSCOPE_NOINSTR uint64_t open_calls_end(uint64_t seen, uint64_t now) {
  const uint64_t switches = switches_now();
  if (seen == ~uint64_t{0} || (seen & 1) || seen >= switches) return now;
  return fmt::running_end(first_switch_to_act_on(seen, switches), switches, now,
                          [](uint64_t k) { return switch_tick(k); });
}

}  // namespace

void op_start() { switch_to(true); }
void op_stop() { switch_to(false); }

void op_clear() {
  ::pthread_mutex_lock(&g_op_lock);
  g_clear_tick = now_tick();
  __atomic_store_n(&g_clear_seq, g_clear_seq + 1, __ATOMIC_RELEASE);
  const fmt::RawClear c{g_clear_seq, g_clear_tick};
  write_meta(fmt::RawMetaType::kClear, &c, sizeof c, nullptr, 0, nullptr, 0);
  const uint64_t w = g_control;
  __atomic_store_n(&g_control, (((w >> 1) + 1) << 1) | (w & 1), __ATOMIC_SEQ_CST);
  ::pthread_mutex_unlock(&g_op_lock);
  poke_threads();
}

uint32_t op_dump(uint32_t reason) {
  if (!g_profile_mode || !process_ensure_init()) return 0;
  const int saved_errno = errno;
  ::pthread_mutex_lock(&g_dump_lock);
  uint32_t seq = 0;
  // Opened at the start (dumps_prepare), while the process could: one that
  // changed its user since may not make files in the session any more.
  if (g_dump_fd < 0) g_dump_fd = process_dir_open("dumps", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const uint32_t threads = __atomic_load_n(&g_reg_count, __ATOMIC_ACQUIRE);
  // Node counts first: the snapshot's size is fixed before anything is written.
  uint64_t* counts = static_cast<uint64_t*>(map_anon(uint64_t{threads} * 16 + 8));
  uint64_t* seen = counts ? counts + threads : nullptr;  // each thread's switches_seen
  if (counts) {
    ::pthread_mutex_lock(&g_reg_lock);  // a live thread's state stays while we read it
    for (uint32_t i = 0; i < threads; ++i)
      seen[i] = g_reg[i].alive && g_reg[i].ts ? __atomic_load_n(&g_reg[i].ts->switches_seen, __ATOMIC_RELAXED)
                                              : ~uint64_t{0};
    ::pthread_mutex_unlock(&g_reg_lock);
  }
  uint64_t max_count = 0, bytes = sizeof(fmt::RawDumpHeader);
  uint32_t with_tree = 0;
  for (uint32_t i = 0; counts && i < threads; ++i) {
    const RawProfHeader* h = g_reg[i].prof;
    counts[i] = h ? __atomic_load_n(&h->node_count, __ATOMIC_ACQUIRE) : 0;
    if (!h) continue;
    ++with_tree;
    if (counts[i] > max_count) max_count = counts[i];
    bytes += sizeof(fmt::RawDumpThread) + counts[i] * sizeof(RawProfNode);
  }
  auto* buf = static_cast<RawProfNode*>(map_anon(max_count * sizeof(RawProfNode) + 4096));
  // Without the session's counter no number would be sure to be the
  // snapshot's alone: none is written.
  if (g_dump_fd >= 0 && counts && buf && g_snapshot_count) {
    const uint64_t now = now_tick();
    fmt::RawDumpHeader dh{};
    memcpy(dh.magic, fmt::kRawDumpMagic, sizeof dh.magic);
    dh.seq = __atomic_add_fetch(g_snapshot_count, 1, __ATOMIC_SEQ_CST);
    dh.reason = reason;
    dh.tick = now;
    dh.threads = with_tree;
    dh.bytes = bytes;
    bool ok = write_all(g_dump_fd, &dh, sizeof dh);
    for (uint32_t i = 0; ok && i < threads; ++i) {
      const RawProfHeader* h = g_reg[i].prof;
      if (!h) continue;
      fmt::RawDumpThread dt{};
      dt.tid = h->tid;
      dt.nodes = copy_thread(h, buf, counts[i], open_calls_end(seen[i], now));
      dt.dropped_calls = h->dropped_calls;
      dt.start_tick = h->start_tick;
      memcpy(dt.name, h->name, sizeof dt.name);
      ok = write_all(g_dump_fd, &dt, sizeof dt) && write_all(g_dump_fd, buf, dt.nodes * sizeof(RawProfNode));
    }
    if (ok) {
      seq = dh.seq;
      ++g_dumps_written;
    }
  }
  if (buf) ::munmap(buf, max_count * sizeof(RawProfNode) + 4096);
  if (counts) ::munmap(counts, uint64_t{threads} * 16 + 8);
  ::pthread_mutex_unlock(&g_dump_lock);
  errno = saved_errno;
  return seq;
}

void release_files_at_detach() {
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) return;
  ::pthread_mutex_lock(&g_reg_lock);
  for (uint32_t i = 0; g_reg && i < g_reg_count; ++i) {
    if (g_reg[i].alive && g_reg[i].ts) thread_release_file(g_reg[i].ts, devnull);
    if (g_reg[i].prof) engine_release_prof(g_reg[i].prof);  // the trees of threads that ended too
  }
  ::pthread_mutex_unlock(&g_reg_lock);
  ::pthread_mutex_lock(&g_dump_lock);
  if (g_dump_fd >= 0) ::close(g_dump_fd);  // used under this lock only
  g_dump_fd = -1;
  // The counter's page becomes memory of our own, in one system call.
  if (g_snapshot_count)
    ::mmap(g_snapshot_count, kCounterBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ::pthread_mutex_unlock(&g_dump_lock);
  process_release_files(devnull);
  ::close(devnull);
}

size_t op_status(char* buf, size_t cap) {
  ctldir::Text out(buf, cap);
  uint64_t calls = 0, nodes = 0, dropped = 0, bytes = 0, event_bytes = 0, lost = 0;
  uint32_t live = 0;
  ::pthread_mutex_lock(&g_reg_lock);
  for (uint32_t i = 0; i < g_reg_count; ++i) {
    const Reg& r = g_reg[i];
    if (r.alive) ++live;
    if (r.alive && r.th) {
      lost += r.th->lost_events;
      if (r.th->ring_segments) event_bytes += (r.th->committed + 1) * r.th->segment_bytes;
    }
    if (!r.prof) continue;
    const uint64_t n = __atomic_load_n(&r.prof->node_count, __ATOMIC_ACQUIRE);
    const auto* nd =
        reinterpret_cast<const RawProfNode*>(reinterpret_cast<const char*>(r.prof) + r.prof->nodes_offset);
    for (uint64_t k = 1; k < n; ++k) calls += nd[k].calls;
    nodes += n;
    dropped += r.prof->dropped_calls;
    bytes += r.prof->node_capacity * sizeof(RawProfNode);
  }
  const uint32_t reg = g_reg_count, started = g_threads_started;
  ::pthread_mutex_unlock(&g_reg_lock);
  out.add("mode: ").add(g_profile_mode ? "profile" : "record").add(g_mode_flags & fmt::kRawModeFiltered ? " (filtered)" : "").add("\n");
  // Say what start and stop turn on and off: call trees kept in process, or
  // events recorded.
  out.add(g_profile_mode ? "profiling: " : "recording: ").add(control_word() & 1 ? "on" : "off").add("\n");
  out.add("pid: ").add_uint(static_cast<uint64_t>(::getpid())).add("\n");
  out.add("threads: ").add_uint(started).add("\n");
  out.add("live_threads: ").add_uint(live).add("\n");
  if (g_profile_mode) {
    out.add("calls: ").add_uint(calls).add("\n");
    out.add("events: ").add_uint(calls * 2).add("\n");
    out.add("nodes: ").add_uint(nodes).add("\n");
    out.add("buffer_bytes: ").add_uint(bytes).add("\n");
    out.add("buffer_use: ").add_uint(nodes * sizeof(RawProfNode)).add(" of ").add_uint(uint64_t{reg} * kMaxNodes * sizeof(RawProfNode)).add(" bytes (").add_uint(nodes).add(" of ").add_uint(uint64_t{reg} * kMaxNodes).add(" nodes)\n");
    out.add("dropped_calls: ").add_uint(dropped).add("\n");
    out.add("dumps: ").add_uint(g_dumps_written).add("\n");
  } else {
    out.add("event_bytes: ").add_uint(event_bytes).add("\n");
    out.add("buffer_use: ring of ").add_uint(uint64_t{fmt::kRingSegments} * fmt::kSegmentBytes).add(" bytes per thread\n");
  }
  out.add("lost_events: ").add_uint(lost).add("\n");
  if (g_interval_ns) out.add("interval_ns: ").add_uint(g_interval_ns).add("\n");
  return out.size();
}

uint64_t dump_interval_ns() { return g_interval_ns; }

namespace {

CALLSCOPE_NOINSTR void mark(const char* text) {
  if (!process_ensure_init()) return;
  ThreadState* t = current_thread();
  const uint32_t id = next_mark_id();
  const uint64_t tick = now_tick();
  fmt::RawMark m{};
  m.tick = tick;
  m.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  m.id = id;
  m.text_len = text ? static_cast<uint32_t>(strnlen(text, 255)) : 0;
  write_meta(fmt::RawMetaType::kMark, &m, sizeof m, text, m.text_len, nullptr, 0);
  // In the thread's events too, where it writes events.
  if (t->in_hook) return;
  const bool writes = t->status == kActive || (t->status == kEngine && engine_emitting(t));
  if (!writes) return;
  t->in_hook = 1;
  signal_fence();
  emit2(t, fmt::RawKind::kMark, tick, id);
  signal_fence();
  t->in_hook = 0;
}

}  // namespace
}  // namespace callscope::rt

// ---- the public API (include/callscope/callscope.h) ----------------------------

using namespace callscope::rt;

CALLSCOPE_EXPORT void callscope_start(void) {
  if (process_ensure_init()) op_start();
}
CALLSCOPE_EXPORT void callscope_stop(void) {
  if (process_ensure_init()) op_stop();
}
CALLSCOPE_EXPORT void callscope_clear(void) {
  if (process_ensure_init()) op_clear();
}
CALLSCOPE_EXPORT int callscope_dump(void) { return static_cast<int>(op_dump(kDumpApi)); }
CALLSCOPE_EXPORT void callscope_mark(const char* text) { mark(text); }
