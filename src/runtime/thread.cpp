// Per-thread lifecycle of the runtime and the slow path of event emission.
//
// A thread's events go to <process dir>/t<tid>.ev: one header page, then
// event words in MAP_SHARED mappings of the file, in one of two modes:
//  - ring mode, under `record`: a fixed ring of kRingSegments segments that
//    the recorder drains (copies to t<tid>.spill and zeroes) while the
//    program runs. After the first lap the writer reuses pages that exist
//    and are mapped: no page is supplied by the kernel in its thread. A
//    writer that finds the next segment not yet drained waits (unless
//    --drop-when-behind); if the recorder is gone, it counts events as lost
//    instead.
//  - grow mode, without a recorder: chunks appended to the file, growing
//    from 64 KiB to 4 MiB. Space is reserved with fallocate(2) before a chunk is
// mapped: writing to a mapped page the file system cannot back would kill
// the program with SIGBUS, so when the disk is full we count events as lost
// instead, retry now and then, and on success write a kLost record followed
// by the shadow stack as kEntryInherited events (a resync), so the reader's
// stack matches ours again.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/path_buf.h"
#include "runtime/patch/patch.h"
#include "runtime/runtime.h"

__thread callscope::rt::ThreadState callscope::rt::tls_thread;

namespace callscope::rt {
namespace {

constexpr uint64_t kFirstChunkBytes = 64 << 10;
constexpr uint64_t kMaxChunkBytes = 4 << 20;
constexpr uint64_t kPageBytes = 4096;
constexpr uint64_t kRetryEvery = 4096;  // lost events between two allocation attempts

CALLSCOPE_NOINSTR bool allocate(int fd, uint64_t offset, uint64_t bytes) {
  if (::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(bytes)) == 0) return true;
  if (errno == EOPNOTSUPP || errno == ENOSYS)  // no fallocate here: sparse, at our risk
    return ::ftruncate(fd, static_cast<off_t>(offset + bytes)) == 0;
  return false;
}

// Maps a fresh chunk of at least `min_bytes` after the current one.
CALLSCOPE_NOINSTR bool map_next_chunk(ThreadState* t, uint64_t min_bytes) {
  uint64_t bytes = t->chunk_bytes == 0 ? kFirstChunkBytes : t->chunk_bytes * 4;
  if (bytes > kMaxChunkBytes) bytes = kMaxChunkBytes;
  while (bytes < min_bytes) bytes *= 2;
  if (!allocate(t->fd, t->file_end, bytes)) return false;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, static_cast<off_t>(t->file_end));
  if (m == MAP_FAILED) return false;
  if (t->chunk) ::munmap(t->chunk, t->chunk_bytes);
  t->chunk = static_cast<uint64_t*>(m);
  t->chunk_bytes = bytes;
  t->file_end += bytes;
  t->header->file_bytes = t->file_end;  // a reader knows a file cut short by this
  // Nested reserves fail while end is null; then pos moves, then end opens.
  t->end = nullptr;
  signal_fence();
  t->pos = t->chunk;
  signal_fence();
  t->hard_end = t->chunk + bytes / 8;
  t->end = t->hard_end - kNestedReserveWords;
  return true;
}

// Ring mode: makes segment n the current one. Before it is reused, the
// segment that last occupied its slot (n - kRingSegments) must be drained.
CALLSCOPE_NOINSTR bool enter_segment(ThreadState* t, uint64_t n) {
  fmt::RawThreadHeader* h = t->header;
  const uint64_t slot = n % fmt::kRingSegments;
  const uint64_t offset = kPageBytes + slot * fmt::kSegmentBytes;
  if (n < fmt::kRingSegments) {
    if (!allocate(t->fd, offset, fmt::kSegmentBytes)) return false;  // first lap: real pages
  } else {
    // The slot is free once the recorder has taken the segment that last
    // used it. Until then the program waits: nothing is lost while the
    // recorder lives and works (it is rung at every segment: doorbell.cpp).
    // It does not wait for a dead recorder, nor for one that said it cannot
    // go on, nor at all under --drop-when-behind: then the events are
    // counted as lost, and the stream marks the gap.
    const uint64_t needed = n - fmt::kRingSegments + 1;
    if (__atomic_load_n(&h->drained, __ATOMIC_ACQUIRE) < needed) {
      if (g_drop_when_behind) return false;
      doorbell_ring();  // the recorder gives back what it holds when a writer waits
      const uint64_t since = mono_ns();
      const uint64_t since_tick = now_tick();
      long pause_ns = 20000;
      while (__atomic_load_n(&h->drained, __ATOMIC_ACQUIRE) < needed) {
        if (__atomic_load_n(&h->drain_failed, __ATOMIC_ACQUIRE) != 0) return false;
        if (::kill(g_recorder_pid, 0) != 0 && errno == ESRCH) return false;
        timespec pause{0, pause_ns};
        ::nanosleep(&pause, nullptr);
        if (pause_ns < 1000000) pause_ns *= 2;  // up to 1 ms: a recorder busy with other threads
      }
      h->wait_ns += mono_ns() - since;
      ++h->waits;
      // The stream says where the program waited (reserve_slow writes it),
      // so that the time is taken out of the frames it happened in.
      t->wait_end = now_tick();
      t->wait_ticks = t->wait_end > since_tick ? t->wait_end - since_tick : 1;
    }
  }
  // The event words are non-temporal stores: fence them before telling the
  // recorder that the previous segment is complete.
  __builtin_ia32_sfence();
  __atomic_store_n(&h->committed, n, __ATOMIC_RELEASE);
  if (n > 0) doorbell_ring();  // segment n - 1 is complete
  t->ring_segment = n;
  t->end = nullptr;
  signal_fence();
  t->pos = t->chunk + slot * (fmt::kSegmentBytes / 8);
  signal_fence();
  t->hard_end = t->pos + fmt::kSegmentBytes / 8;
  t->end = t->hard_end - kNestedReserveWords;
  // Each segment starts with the stack-pointer base: a reader can start at
  // any segment (finish, after the recorder streamed the ones before).
  if (t->sp_base) {
    uint64_t* p = advance_pos(t, 2);
    store_word(p, word0(fmt::RawKind::kSpBase, 0));
    store_word(p + 1, t->sp_base);
  }
  return true;
}

// Ring mode: sizes the file for the ring (sparse; each segment gets its
// pages on the first lap) and maps the whole ring once.
CALLSCOPE_NOINSTR bool open_ring(ThreadState* t) {
  const uint64_t ring_bytes = uint64_t{fmt::kRingSegments} * fmt::kSegmentBytes;
  // The first segment's pages before the ring's size: the recorder takes up
  // a file once it has the ring's size, so a file whose first segment finds
  // no space (then removed, its thread untraced) is never taken for a thread.
  if (!allocate(t->fd, kPageBytes, fmt::kSegmentBytes)) return false;
  if (::ftruncate(t->fd, static_cast<off_t>(kPageBytes + ring_bytes)) != 0) return false;
  void* m = ::mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, kPageBytes);
  if (m == MAP_FAILED) return false;
  t->chunk = static_cast<uint64_t*>(m);
  t->chunk_bytes = ring_bytes;
  if (!enter_segment(t, 0)) {  // the caller falls back to grow mode
    ::munmap(m, ring_bytes);
    t->chunk = nullptr;
    t->chunk_bytes = 0;
    return false;
  }
  t->file_end = kPageBytes + ring_bytes;
  t->header->segment_bytes = fmt::kSegmentBytes;
  t->header->ring_segments = fmt::kRingSegments;
  return true;
}

// The next place to write: the next segment of the ring, or a new chunk.
CALLSCOPE_NOINSTR bool next_space(ThreadState* t, uint64_t min_bytes) {
  if (t->header->ring_segments) return min_bytes <= fmt::kSegmentBytes && enter_segment(t, t->ring_segment + 1);
  return map_next_chunk(t, min_bytes);
}

// Signals are blocked while a chunk is switched or a thread file is set up
// (a few system calls, once per chunk): a handler's hooks then run after,
// against a consistent state, instead of being dropped.
class SignalBlock {
 public:
  CALLSCOPE_NOINSTR SignalBlock() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  CALLSCOPE_NOINSTR ~SignalBlock() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

CALLSCOPE_NOINSTR void note_lost(ThreadState* t) {
  if (!t->dropping) t->lost_since = now_tick();
  ++t->lost_pending;
  t->dropping = 1;
  if (t->header) ++t->header->lost_events;
}

CALLSCOPE_NOINSTR void read_thread_name(char (&name)[16]) {
  int fd = ::open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[32];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0')) --n;
  if (n > 15) n = 15;
  memset(name, 0, sizeof name);
  memcpy(name, buf, static_cast<size_t>(n));
}

// Creates the thread's event file in the current process directory, maps its
// header page and its first chunk. On failure, returns the errno of the step
// that failed and leaves no file behind (a reader would take an empty or
// headerless file for damage); `name` is the file's name on success.
CALLSCOPE_NOINSTR int open_thread_file(ThreadState* t, uint64_t now, PathBuf& name) {
  int fd = -1;
  for (unsigned attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    name.clear();
    name.add("t").add_uint(t->tid);
    if (attempt) name.add(".").add_uint(attempt);  // a tid reused within the process
    name.add(".ev");
    fd = process_dir_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return errno;
  }
  if (fd < 0) return EEXIST;
  auto fail = [&](int e) {
    ::close(fd);
    process_dir_unlink(name.c_str());
    return e != 0 ? e : EIO;
  };
  if (!allocate(fd, 0, kPageBytes)) return fail(errno);
  void* h = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (h == MAP_FAILED) return fail(errno);
  t->fd = fd;
  t->header = static_cast<fmt::RawThreadHeader*>(h);
  t->file_end = kPageBytes;
  t->chunk = nullptr;
  t->chunk_bytes = 0;
  t->sp_base = 0;
  fmt::RawThreadHeader* hd = t->header;
  memcpy(hd->magic, fmt::kRawThreadMagic, sizeof hd->magic);
  hd->version = fmt::kRawVersion;
  hd->header_size = fmt::kRawThreadHeaderSize;
  hd->pid = static_cast<uint32_t>(::getpid());
  hd->tid = t->tid;
  hd->start_tick = now;
  hd->flags = (hd->pid == hd->tid) ? fmt::kRawThreadMain : 0;
  hd->switches_seen = t->switches_seen;  // a fork child's: what it acted on before the fork
  read_thread_name(hd->name);
  t->ring_segment = 0;
  if (!((g_recorder_pid && open_ring(t)) || map_next_chunk(t, 0))) {
    const int e = errno;
    ::munmap(t->header, kPageBytes);
    t->header = nullptr;
    t->fd = -1;
    return fail(e);
  }
  return 0;
}

// A thread that cannot be traced says so in the process's meta file (whose
// reserve lets the record land on a full file system: process.cpp), with
// the errno that stopped it: the trace lists it as untraced instead of not
// knowing it existed.
CALLSCOPE_NOINSTR void note_untraced(ThreadState* t, uint64_t tick, int error) {
  fmt::RawUntracedThread r{};
  r.tick = tick;
  r.tid = t->tid;
  r.error = error;
  // Not /proc/thread-self/comm: with no descriptor left (EMFILE) it cannot
  // be opened. The system call, not prctl(): ours is a wrapper (names.cpp).
  ::syscall(SYS_prctl, PR_GET_NAME, r.name);
  r.name[sizeof r.name - 1] = '\0';
  write_meta(fmt::RawMetaType::kUntracedThread, &r, sizeof r, nullptr, 0, nullptr, 0);
}

CALLSCOPE_NOINSTR void close_thread_file(ThreadState* t) {
  if (t->chunk) ::munmap(t->chunk, t->chunk_bytes);
  if (t->header) ::munmap(t->header, kPageBytes);
  if (t->fd >= 0) ::close(t->fd);
  t->chunk = nullptr;
  t->header = nullptr;
  t->fd = -1;
  t->pos = nullptr;
  t->end = nullptr;
}

// Writes every open frame again, as kEntryInherited with its original tick.
CALLSCOPE_NOINSTR void emit_stack(ThreadState* t) {
  for (uint32_t i = 0; i < t->depth; ++i) {
    const Frame& f = t->stack[i];
    emit_entry(t, fmt::RawKind::kEntryInherited, f.tick, f.fn, f.sp);
  }
}

}  // namespace

bool thread_init(ThreadState* t) {
  // Detached: a thread whose first hook comes now (a stub left in place, a
  // hook's address the program copied) is never recorded.
  if (!process_ensure_init() || detached()) {
    t->status = kDisabled;
    return false;
  }
  const int saved_errno = errno;
  SignalBlock block;
  t->tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  t->fd = -1;
  const uint64_t now = now_tick();
  PathBuf file;
  int error = 0;
  void* s = ::mmap(nullptr, uint64_t{kStackCapacity} * sizeof(Frame), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (s == MAP_FAILED)
    error = errno;
  else
    error = open_thread_file(t, now, file);
  if (error == 0) {
    t->stack = static_cast<Frame*>(s);
    t->depth = 0;
    t->overflow = 0;
    errno = 0;
    if (!engine_thread_init(t)) {
      error = errno != 0 ? errno : EIO;
      close_thread_file(t);
      process_dir_unlink(file.c_str());  // an event file with no tree beside it would read as a thread
      t->stack = nullptr;
    }
  }
  if (error != 0) {
    if (s != MAP_FAILED) ::munmap(s, uint64_t{kStackCapacity} * sizeof(Frame));
    t->status = kDisabled;
    note_untraced(t, now, error);
    errno = saved_errno;
    return false;
  }
  t->control_seen = ~uint64_t{0};  // the first hook looks at g_control
  // A thread that begins while stopped starts paused (record_pause).
  const uint64_t switches = switches_now();
  set_switches_seen(t, switches - (switches & 1));
  // The key's destructor tells us when the thread exits (not for the thread
  // that calls exit(): process.cpp handles that one).
  ::pthread_setspecific(static_cast<pthread_key_t>(g_thread_key), t);
  t->status = g_engine ? kEngine : kActive;
  errno = saved_errno;
  return true;
}

void thread_exit(void* arg) {
  auto* t = static_cast<ThreadState*>(arg);
  if (t != current_thread() || (t->status != kActive && t->status != kEngine && t->status != kStopped)) return;
  const int saved_errno = errno;
  control_catch_up(t);  // before it ends: a pause, or the end of one, that it has not written
  t->in_hook = 1;
  t->status = kExited;  // hooks of later destructors, or of a handler, do nothing
  signal_fence();
  t->header->end_tick = now_tick();
  read_thread_name(t->header->name);
  engine_thread_exit(t);
  // The last event words first, then the flag the recorder acts on: it
  // takes the segment being written too, and lets the thread go.
  __builtin_ia32_sfence();
  __atomic_fetch_or(&t->header->flags, fmt::kRawThreadClosed, __ATOMIC_RELEASE);
  if (t->header->ring_segments) doorbell_ring();
  close_thread_file(t);
  ::munmap(t->stack, uint64_t{kStackCapacity} * sizeof(Frame));
  t->stack = nullptr;
  libcalls_thread_exit(t);
  signal_fence();
  t->in_hook = 0;
  errno = saved_errno;
}

// In a fork child: the forking thread's file and mappings are the parent's
// (MAP_SHARED), so drop them and start a file of our own in the child's
// process directory, opened by the frames inherited from the parent.
// A fork child that is not traced (record --follow): the parent's files
// are not its own to write; its hooks do nothing from now on.
void thread_drop_after_fork(ThreadState* t) {
  SignalBlock block;
  close_thread_file(t);
  engine_drop_after_fork(t);
  t->status = kDisabled;
}

void thread_reset_after_fork(ThreadState* t) {
  if (t->status != kActive && t->status != kEngine && t->status != kStopped) {
    engine_reset_after_fork(t);
    return;
  }
  const int saved_errno = errno;
  SignalBlock block;
  close_thread_file(t);
  t->tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  t->dropping = 0;
  t->no_space = 0;
  t->lost_pending = 0;
  PathBuf file;
  const uint64_t now = now_tick();
  if (const int error = open_thread_file(t, now, file); error != 0) {
    t->status = kDisabled;
    note_untraced(t, now, error);
    errno = saved_errno;
    return;
  }
  emit_stack(t);
  // A child forked while stopped: its stream pauses after the frames it
  // inherited, until the start (the engine writes no inherited frame).
  if (t->status == kStopped && !g_engine) emit1(t, fmt::RawKind::kPause, now_tick());
  engine_reset_after_fork(t);
  errno = saved_errno;
}

// A stop: the stream pauses at the stop's tick (a thread that began while
// stopped: at its start) and the shadow stack is kept, updated by the hooks
// without events while stopped (hooks.cpp).
void record_pause(ThreadState* t, uint64_t tick) {
  if (t->header && tick < t->header->start_tick) tick = t->header->start_tick;
  t->status = kStopped;
  emit1(t, fmt::RawKind::kPause, tick);
}

namespace {
CALLSCOPE_NOINSTR bool shadow_frame(const ThreadState* t, uint32_t i, Frame* f) {
  *f = t->stack[i];
  return true;
}
}  // namespace

void record_resume(ThreadState* t, uint64_t tick) {
  t->status = kActive;
  emit_resume(t, tick, t->depth, shadow_frame);
}

void emit_resume(ThreadState* t, uint64_t tick, uint32_t n, bool (*frame)(const ThreadState*, uint32_t, Frame*)) {
  // Events lost before (the pause itself, maybe): the loss's own resync,
  // written with the next event that finds space (reserve_slow), ends the
  // gap; this kResume then ends nothing.
  if (t->dropping) {
    emit1(t, fmt::RawKind::kResume, tick);
    return;
  }
  // One block, reserved at once: a resync cut short by a full ring, then
  // followed by a loss's resync, would open its frames twice. Two words
  // per frame, two more where the stack-pointer base moves; the words left
  // over stay zero (readers skip them). Signals wait: a handler's hook must
  // not write an entry relative to a base the block is about to move.
  const unsigned words = n * 4 + 1;  // n <= kStackCapacity
  SignalBlock block;
  uint64_t* p = reserve(t, words);
  if (!p) return;  // counted as lost: the loss's resync ends the pause
  for (uint32_t i = 0; i < n; ++i) {
    Frame f;
    if (!frame(t, i, &f)) continue;
    int64_t rel = static_cast<int64_t>(t->sp_base - f.sp) >> 4;
    if (static_cast<uint64_t>(rel + 32767) > 65534) {
      store_word(p, word0(fmt::RawKind::kSpBase, f.tick));
      store_word(p + 1, f.sp);
      p += 2;
      t->sp_base = f.sp;
      rel = 0;
    }
    store_word(p, word0(fmt::RawKind::kEntryInherited, f.tick));
    signal_fence();
    store_word(p + 1, (f.fn & fmt::kRawAddrMask) | (static_cast<uint64_t>(static_cast<uint16_t>(rel)) << 48));
    p += 2;
  }
  store_word(p, word0(fmt::RawKind::kResume, tick));
}

uint64_t* reserve_slow(ThreadState* t, unsigned words) {
  // A hook interrupted by a signal must find the chunk it reserved from
  // where it left it: no chunk switch from a nested hook or a nested slow path.
  if (t->nested || t->in_slow || (t->status != kActive && t->status != kEngine && t->status != kStopped)) {
    note_lost(t);
    return nullptr;
  }
  // While the disk is full, try again only every kRetryEvery events.
  if (t->no_space && (t->lost_pending + 1) % kRetryEvery != 0) {
    note_lost(t);
    return nullptr;
  }
  const int saved_errno = errno;
  uint64_t* slot = nullptr;
  {
  SignalBlock block;
  t->in_slow = 1;
  signal_fence();
  // Room for the event, a wait it may have made (two words), and for a gap
  // if one is due: kLost, a resync of the whole stack (two words per frame,
  // two more when a frame needs a new sp base), kResume and the sp base back.
  const uint64_t need = words * 8 + 16 + (t->dropping ? 40 + uint64_t{t->depth} * 32 : 0);
  if (next_space(t, need)) {
    t->no_space = 0;
    if (t->dropping) {
      // The gap: from the first event dropped to now (format/trace_format.h).
      t->dropping = 0;
      emit2(t, fmt::RawKind::kLost, t->lost_since, t->lost_pending);
      t->lost_pending = 0;
      const uint64_t base = t->sp_base;
      emit_stack(t);
      const uint64_t now = now_tick();
      emit1(t, fmt::RawKind::kResume, now);
      // The resync may have moved the sp base; the event we reserve for was
      // made relative to the one before (emit_entry): that one again.
      if (t->sp_base != base) {
        emit2(t, fmt::RawKind::kSpBase, now, base);
        t->sp_base = base;
      }
    }
    if (t->wait_ticks) {
      // The event reserved for was stamped before the wait: the wait goes
      // right after it, and the events after it were stamped after it.
      slot = advance_pos(t, words + 2);
      store_word(slot + words, word0(fmt::RawKind::kWait, t->wait_end));
      signal_fence();
      store_word(slot + words + 1, t->wait_ticks);
      t->wait_ticks = 0;
    } else {
      slot = advance_pos(t, words);
    }
  } else {
    t->no_space = 1;
    note_lost(t);  // this event
  }
  signal_fence();
  t->in_slow = 0;
  }  // signals blocked since the chunk switch began are delivered here
  errno = saved_errno;
  return slot;
}

// Detached (attach.cpp): the thread's file let go of while the thread may
// be anywhere, even inside a hook of ours. Each step is one system call that
// replaces a whole object at once -- anonymous memory over a mapping of the
// file, /dev/null over its descriptor -- so whatever the thread still does
// with them lands harmlessly, and the file's pages are freed with the
// session. A late writer finds drain_failed set and never waits. The
// descriptor's number stays taken, by /dev/null, until the thread ends.
void thread_release_file(ThreadState* t, int devnull) {
  constexpr int kAnon = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE;
  fmt::RawThreadHeader* h = t->header;
  if (!h) return;
  // The ring is mapped once for the thread's life; a chunk of grow mode
  // (when no ring could be made) is replaced by the thread itself as it
  // goes, so it is left to it (the descriptor below makes its next fail).
  if (h->ring_segments && t->chunk && t->chunk_bytes)
    ::mmap(t->chunk, t->chunk_bytes, PROT_READ | PROT_WRITE, kAnon, -1, 0);
  if (::mmap(h, kPageBytes, PROT_READ | PROT_WRITE, kAnon, -1, 0) != MAP_FAILED)
    __atomic_store_n(&h->drain_failed, 1, __ATOMIC_RELEASE);
  if (t->header && t->fd >= 0) replace_session_fd(t->fd, devnull);
  if (t->prof && t->prof_fd >= 0) replace_session_fd(t->prof_fd, devnull);
}

}  // namespace callscope::rt
