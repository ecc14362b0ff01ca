// Memory events (record --memory, issue 12): libcallscope-mem.so's wrappers
// of malloc, free, operator new and the rest call callscope_rt_memory, which
// writes the event into the thread's stream beside its calls. The block is
// attributed later, by the frames open in the stream at that moment: no
// unwinding here.
//
// Not recorded: allocations before the runtime has started (the dynamic
// loader's, early constructors'), the runtime's own (a hook, or thread set-up,
// is running: in_hook), and those of a thread that is stopped, disabled,
// exited, or run by the engine (profile mode, filters).
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/path_buf.h"
#include "runtime/runtime.h"

namespace callscope::rt {

bool g_memory = false;  // record --memory (CALLSCOPE_MEMORY=1): the API below records

namespace {

CALLSCOPE_NOINSTR inline void emit_memory(ThreadState* t, uint8_t op, uint64_t ptr, uint64_t size,
                                          uint64_t tick = now_tick()) {
  const uint64_t w1 = (ptr & fmt::kRawAddrMask) | (uint64_t{op} << 56);
  if (fmt::alloc_op_frees(op)) {
    emit2(t, fmt::RawKind::kFree, tick, w1);
    return;
  }
  uint64_t* p = reserve(t, 3);
  if (!p) return;
  // w0 first, then the rest: a crash between leaves a zero word (torn).
  store_word(p, word0(fmt::RawKind::kAlloc, tick));
  signal_fence();
  store_word(p + 1, w1);
  store_word(p + 2, size + 1);
}

// A tag's push (its id) or pop (kRawTagPop).
CALLSCOPE_NOINSTR inline void emit_tag(ThreadState* t, uint64_t w1) { emit2(t, fmt::RawKind::kTag, now_tick(), w1); }

// record --unwind: the shadow stack made the allocation's unwound path
// (innermost first). A frame is the same as the one open at its depth when
// its function and the call site in its caller are: the frames above the
// first that differs are closed (kExit), the new ones entered (kEntry, stack
// pointer unknown), all at this tick. So the stream has the frames the
// allocations were made in, as if hooks had told them; only their counts
// and times are not the program's (the trace says so: kRawModeUnwound).
CALLSCOPE_NOINSTR void sync_unwound(ThreadState* t, const uint64_t* fns, const uint64_t* sites, uint32_t n,
                                    uint64_t now) {
  if (t->overflow) return;  // not with hooks' frames past the capacity (a program's own hooks)
  if (n > kStackCapacity) n = kStackCapacity;
  // Frame d (outermost 0) is fns[n-1-d], called from sites[n-d] (d > 0).
  auto key_at = [&](uint32_t d) -> uint64_t { return d ? sites[n - d] : 0; };
  uint32_t same = 0;
  while (same < n && same < t->depth && t->stack[same].fn == fns[n - 1 - same] && t->stack[same].key == key_at(same))
    ++same;
  while (t->depth > same) {
    emit1(t, fmt::RawKind::kExit, now);
    --t->depth;
  }
  for (uint32_t d = same; d < n; ++d) {
    emit_entry(t, fmt::RawKind::kEntry, now, fns[n - 1 - d], 0);
    t->stack[t->depth] = Frame{fns[n - 1 - d], 0, now, key_at(d)};
    ++t->depth;
  }
}

// An allocation's unwound path (record --unwind), innermost frame first.
struct UnwoundPath {
  const uint64_t* fns;
  const uint64_t* sites;
  uint32_t n;
};

// The event itself, inside the gate: a tag's (ptr is w1), or a memory event
// after the frames of its unwound path, when it has one.
CALLSCOPE_NOINSTR inline void write_event(ThreadState* t, uint8_t op, uint64_t ptr, uint64_t size, bool tag,
                                          const UnwoundPath* path) {
  if (tag) {
    emit_tag(t, ptr);
  } else if (path) {
    const uint64_t now = now_tick();
    sync_unwound(t, path->fns, path->sites, path->n, now);
    emit_memory(t, op, ptr, size, now);
  } else {
    emit_memory(t, op, ptr, size);
  }
}

CALLSCOPE_NOINSTR __attribute__((noinline)) void memory_slow(ThreadState* t, uint8_t op, uint64_t ptr,
                                                             uint64_t size, bool tag, const UnwoundPath* path) {
  if (t->in_hook) return;  // the runtime's own, or a signal handler's inside a hook
  if (!process_ready()) return;
  if (!slow_gate_enter(t)) return;
  if (t->status == kActive) write_event(t, op, ptr, size, tag, path);
  signal_fence();
  t->in_hook = 0;
}

// One event of the calling thread: a memory event (with its unwound path,
// if any), or a tag's (tag: ptr is w1).
CALLSCOPE_NOINSTR inline void memory_event(uint8_t op, uint64_t ptr, uint64_t size, bool tag,
                                           const UnwoundPath* path = nullptr) {
  ThreadState* t = current_thread();
  if (CALLSCOPE_LIKELY(t->gate == kGateOpen)) {
    t->in_hook = 1;
    signal_fence();
    write_event(t, op, ptr, size, tag, path);
    signal_fence();
    t->in_hook = 0;
  } else {
    // Thread set-up and chunk switches may set errno; malloc's callers may
    // look at it after.
    const int saved_errno = errno;
    memory_slow(t, op, ptr, size, tag, path);
    errno = saved_errno;
  }
}

// Tags are interned: the same text, the same id, for the life of the
// process (ids come from the marks' counter, and the text goes to meta as a
// mark of kind tag, once). A table of fixed size, under a spin lock: no
// allocation in here. Past kMaxTags distinct tags, every new one is
// counted under one tag that says so.
constexpr uint32_t kTagSlots = 8192;  // at most half full: a lookup always ends
constexpr uint32_t kMaxTags = 4095;   // and the overflow tag
constexpr uint32_t kTagMaxLen = 63;
struct TagSlot {
  uint32_t id;
  uint32_t len;
  char text[kTagMaxLen + 1];
};
TagSlot g_tags[kTagSlots];
uint32_t g_tag_count = 0;
int g_tag_lock = 0;

CALLSCOPE_NOINSTR uint64_t tag_hash(const char* text, uint32_t len) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < len; ++i) h = (h ^ static_cast<unsigned char>(text[i])) * 1099511628211ull;
  return h;
}

CALLSCOPE_NOINSTR uint32_t tag_id(const char* text) {
  static const char kOverflow[] = "[more than 4095 tags]";
  if (!text) text = "";
  uint32_t len = static_cast<uint32_t>(strnlen(text, kTagMaxLen));
  while (__atomic_exchange_n(&g_tag_lock, 1, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
  auto slot_of = [](const char* t, uint32_t n) {
    uint32_t i = static_cast<uint32_t>(tag_hash(t, n)) % kTagSlots;
    while (g_tags[i].id && !(g_tags[i].len == n && memcmp(g_tags[i].text, t, n) == 0)) i = (i + 1) % kTagSlots;
    return i;
  };
  uint32_t i = slot_of(text, len);
  // A tag already known keeps its id; a new one past the table's room is
  // counted under the overflow tag.
  if (!g_tags[i].id && g_tag_count >= kMaxTags) {
    text = kOverflow;
    len = sizeof kOverflow - 1;
    i = slot_of(text, len);
  }
  TagSlot& slot = g_tags[i];
  if (!slot.id) {
    slot.id = next_mark_id();
    slot.len = len;
    memcpy(slot.text, text, len);
    ++g_tag_count;
    fmt::RawMark m{};
    m.tick = now_tick();
    m.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
    m.id = slot.id;
    m.text_len = len;
    m.kind = fmt::kMarkKindTag;
    write_meta(fmt::RawMetaType::kMark, &m, sizeof m, slot.text, len, nullptr, 0);
  }
  const uint32_t id = slot.id;
  __atomic_store_n(&g_tag_lock, 0, __ATOMIC_RELEASE);
  return id;
}

}  // namespace

// The resident set (format/resident.h): /proc/self/smaps copied whole into
// the process directory as smaps.<mono_ns>.<reason>, read at finalization.
// Plain system calls, a buffer on the stack: no allocation, nothing told.
CALLSCOPE_NOINSTR void snapshot_smaps(const char* reason) {
  if (!g_memory) return;
  const int saved_errno = errno;
  const int in = ::open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  if (in >= 0) {
    PathBuf name;
    name.add("smaps.").add_uint(mono_ns()).add(".").add(reason);
    const int out = process_dir_open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out >= 0) {
      char buf[8192];
      for (;;) {
        const ssize_t n = ::read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        ssize_t done = 0;
        while (done < n) {
          const ssize_t w = ::write(out, buf + done, static_cast<size_t>(n - done));
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) break;
          done += w;
        }
        if (done < n) break;
      }
      ::close(out);
    }
    ::close(in);
  }
  errno = saved_errno;
}

// A fork child writes a meta file of its own: its tags are told there again.
CALLSCOPE_NOINSTR void tags_after_fork() {
  memset(g_tags, 0, sizeof g_tags);
  g_tag_count = 0;
  g_tag_lock = 0;  // another thread of the parent may have held it
}

}  // namespace callscope::rt

using namespace callscope::rt;

// op: a format::AllocOp; size: the block's (allocations only).
CALLSCOPE_EXPORT void callscope_rt_memory(unsigned op, const void* ptr, unsigned long size) {
  memory_event(static_cast<uint8_t>(op), reinterpret_cast<uint64_t>(ptr), size, false);
}

// An allocation with its unwound path (libcallscope-mem.so under --unwind).
CALLSCOPE_EXPORT void callscope_rt_memory_path(unsigned op, const void* ptr, unsigned long size, const uint64_t* fns,
                                               const uint64_t* sites, unsigned n) {
  const UnwoundPath path{fns, sites, n};
  memory_event(static_cast<uint8_t>(op), reinterpret_cast<uint64_t>(ptr), size, false, &path);
}

// ---- the public API of memory (include/callscope/callscope.h) ------------------
// Recorded under record --memory only; a no-op otherwise.

CALLSCOPE_EXPORT void callscope_alloc(const void* ptr, unsigned long size) {
  if (g_memory && ptr) memory_event(static_cast<uint8_t>(fmt::AllocOp::kApi), reinterpret_cast<uint64_t>(ptr), size, false);
}
CALLSCOPE_EXPORT void callscope_free(const void* ptr) {
  if (g_memory && ptr) memory_event(static_cast<uint8_t>(fmt::AllocOp::kApiFree), reinterpret_cast<uint64_t>(ptr), 0, false);
}
CALLSCOPE_EXPORT void callscope_tag_push(const char* tag) {
  if (process_ensure_init() && g_memory) memory_event(0, tag_id(tag), 0, true);
}
CALLSCOPE_EXPORT void callscope_tag_pop(void) {
  if (g_memory) memory_event(0, fmt::kRawTagPop, 0, true);
}
