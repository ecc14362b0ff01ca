// The raw layout: what the runtime writes inside the traced program while
// it runs, and the recorder (or `finish`) reads -- one directory per process
// incarnation, holding an append-only metadata file and one file of
// fixed-width event words per thread. The thread files are file-backed
// MAP_SHARED memory, so whatever a thread stored before the process died
// (SIGSEGV, abort, _exit, SIGKILL) is in the page cache and therefore in the
// file. The final trace file is trace_format.h's, which includes this one.
//
// The runtime includes these headers and nothing else of ours, so they must
// stay free of the C++ library (plain structs and constants only).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "format/alloc_op.h"

namespace callscope::format {

// ---------------------------------------------------------------------------
// Shared vocabulary
// ---------------------------------------------------------------------------

// Which clock produced the ticks of a trace.
enum class ClockKind : uint32_t {
  kTsc = 1,        // x86 invariant TSC; calibrated to ns against CLOCK_MONOTONIC
  kMonotonic = 2,  // clock_gettime(CLOCK_MONOTONIC) in ns (ticks == ns)
};

// ---------------------------------------------------------------------------
// 1. Raw layout (runtime -> recorder)
// ---------------------------------------------------------------------------
//
// <session dir>/                     CALLSCOPE_DIR, made by `callscope record`
//   recorder.meta                    records written by the recorder itself
//   snapshots.seq                    profile mode: the session's count of snapshots (u32, mapped)
//   <pid>.<n>/                       one process incarnation (n counts execs)
//     meta                           RawMeta* records, appended with write(2)
//     t<tid>.ev                      RawThreadHeader page, then event words
//     t<tid>.spill                   ring mode: drained segments, in order
//     t<tid>.prof                    profile mode: the thread's live call tree
//     dumps                          profile mode: snapshots, appended

inline constexpr uint32_t kRawVersion = 2;
inline constexpr char kRawThreadMagic[8] = {'C', 'S', 'R', 'A', 'W', 'T', 'H', '1'};
inline constexpr char kRawMetaMagic[8] = {'C', 'S', 'R', 'A', 'W', 'M', 'D', '1'};
inline constexpr uint64_t kRawThreadHeaderSize = 4096;  // bytes; events start here

// Raw event words. Every event starts with one 64-bit word
//     w0 = (tick << 8) | kind      tick: 56 bits, relative to the process base
// and kinds marked (16) carry a second word w1. An all-zero word is never an
// event: the reader skips zero words, which are the unused tail of a chunk or a
// slot reserved but not yet filled when the process died.
enum class RawKind : uint8_t {
  kEntry = 1,           // (16) w1 = addr[0:48) | int16 sp_rel << 48
  kExit = 2,            // (8)  returns from the function on top of the stack
  kExitUnwound = 3,     // (8)  top frame abandoned (longjmp, exception)
  kExitStray = 4,       // (16) w1 = addr: an exit with no matching entry
  kSpBase = 5,          // (16) w1 = new stack-pointer base, absolute
  kLost = 6,            // (16) w1 = events dropped just before this point
  kEntryInherited = 7,  // (16) as kEntry: a frame already open (fork, resync)
  kMark = 8,            // (16) w1 = mark id (RawMark in meta holds its text)
  kExitTruncated = 9,   // (8)  top frame closed without its exit
  kPause = 10,          // (8)  recording stopped (callscope_stop, ctl stop): a gap begins
  kResume = 11,         // (8)  a gap (kLost or kPause, then its resync) ends here
  kAlloc = 12,          // (24) w1 = ptr[0:48) | AllocOp << 56; w2 = size + 1 (record --memory)
  kFree = 13,           // (16) w1 = ptr[0:48) | AllocOp << 56
  kTag = 14,            // (16) w1 = tag id (RawMark kind kMarkKindTag holds its text), or kRawTagPop
  kWait = 15,           // (16) w1 = ticks the thread waited for the recorder (>= 1); tick: the wait's end
};
// A wait (ring mode: the next segment was not drained yet) is written right
// after the event whose slot the thread was waiting for: that event's tick
// is from before the wait, the next one's from after it.
// A gap in a raw stream: kLost (tick: when the first event was dropped) or
// kPause (tick: the stop), then the resync -- every frame open at the end of
// the gap as kEntryInherited with its own entry tick -- then kResume (tick:
// the end of the gap). The shadow stack is kept through the gap, so the
// reader can tell the frames that went on through it from those that ended
// or began inside it. A kLost with no kResume after it: the stream ends in
// the gap.
inline constexpr unsigned kRawKindBits = 8;
inline constexpr unsigned kRawTickBits = 56;
inline constexpr uint64_t kRawTickMask = (uint64_t{1} << kRawTickBits) - 1;
inline constexpr uint64_t kRawAddrMask = (uint64_t{1} << 48) - 1;
inline constexpr uint64_t kRawTagPop = ~uint64_t{0};  // kTag: the last tag pushed ends
// sp_rel = (sp_base - sp) / kSpUnit as int16; out of range -> kSpBase first.
inline constexpr uint64_t kSpUnit = 16;  // bytes; the ABI aligns call sites to 16

constexpr unsigned raw_event_words(RawKind k) {
  if (k == RawKind::kAlloc) return 3;
  return (k == RawKind::kExit || k == RawKind::kExitUnwound || k == RawKind::kExitTruncated ||
          k == RawKind::kPause || k == RawKind::kResume)
             ? 1
             : 2;
}
constexpr bool raw_kind_valid(uint8_t k) { return k >= 1 && k <= 15; }
// Every word of an event after the first is non-zero (a reader tells an event
// stored whole from one cut short by a crash): a kAlloc's and kFree's w1
// carries its AllocOp (never 0: format/alloc_op.h), a kAlloc's w2 its size
// plus one; a kTag's w1 is an id (1, 2, ...) or kRawTagPop.

// The first 4096 bytes of a thread file; updated in place through the mapping.
struct RawThreadHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;   // kRawThreadHeaderSize
  uint32_t pid;
  uint32_t tid;
  uint64_t start_tick;    // relative to the process base
  uint64_t end_tick;      // 0 while running or when the thread never exited cleanly
  uint64_t lost_events;   // total dropped (disk full, re-entrant slow path)
  uint64_t flags;         // kRawThreadMain, ...
  char name[16];          // from /proc/thread-self/comm at thread start, again at a clean exit
  // Ring mode (under `record`): the events live in ring_segments segments of
  // segment_bytes each, from offset kRawThreadHeaderSize; segment i (counted
  // from 0 over the thread's life) is at slot i % ring_segments. The
  // recorder copies complete segments, in order, to t<tid>.spill and zeroes
  // them. 0 segments: grow mode, chunks appended to the file.
  uint32_t ring_segments;
  uint32_t segment_bytes;
  uint64_t committed;     // writer: the segment being written; all before it are complete
  uint64_t drained;       // recorder: segments before it are in the spill and zeroed
  uint64_t drain_failed;  // recorder: nonzero once it cannot drain (writers then drop)
  uint64_t wait_ns;       // writer: time spent waiting for the recorder to free a segment
  uint64_t waits;         // writer: how many times it waited
  // Grow mode: the file holds event chunks up to this offset (bytes), set
  // as each chunk is added; a file shorter than that was cut short. 0:
  // unknown (a runtime before this field).
  uint64_t file_bytes;
  // The stops and starts (RawSwitch::seq) the thread has acted on. One that
  // made no call from a switch to the process's end never acted on it: the
  // reader applies it (runtimes before kSwitch records wrote 0 here and no
  // such record, so nothing is applied).
  uint64_t switches_seen;
};
static_assert(sizeof(RawThreadHeader) == 136);
// The recorder's doorbell, a FIFO in the session: the runtime rings it when
// there is work (runtime/doorbell.cpp), the recorder sleeps on it (drainer.h).
inline constexpr char kDoorbellName[] = "doorbell";
inline constexpr uint32_t kRingSegments = 16;
inline constexpr uint32_t kSegmentBytes = 256 << 10;
inline constexpr uint64_t kRawThreadMain = 1;
// The thread has exited: it writes no more events (end_tick alone does not
// say so: the thread that calls exit() goes on running destructors).
inline constexpr uint64_t kRawThreadClosed = 2;

// Metadata records of `meta` and `recorder.meta`: a header, then the body,
// then variable bytes (strings); `size` covers all, rounded up to 8.
enum class RawMetaType : uint32_t {
  kFileHeader = 1,     // first record of every meta file
  kProcessStart = 2,   // RawProcessStart + exe path + NUL + cmdline (NUL-separated)
  kModule = 3,         // RawModule + path
  kProcessExit = 4,    // RawProcessExit
  kCalibration = 5,    // RawCalibration
  kChildStatus = 6,    // RawChildStatus (recorder: how a process it reaped ended)
  kRecorderInfo = 7,   // RawRecorderInfo + cwd + NUL + cmdline (recorder only)
  kMark = 8,           // RawMark + text (callscope_mark)
  kMode = 9,           // RawMode: how the process was traced
  kClear = 10,         // RawClear: callscope_clear() (for threads that never applied it)
  kThreadName = 11,    // RawThreadName: a thread was named while it ran
  kSwitch = 12,        // RawSwitch: a stop or a start (callscope_stop/start, ctl)
  kUntracedThread = 13,  // RawUntracedThread: a thread that runs without being recorded
  kStream = 20,        // RawStream + path (recorder only): where the live trace is written
  kStreamThread = 21,  // RawStreamThread + path (recorder only): a thread file it streams
};

struct RawMetaHeader {
  uint32_t type;  // RawMetaType
  uint32_t size;  // bytes including this header, multiple of 8
};
static_assert(sizeof(RawMetaHeader) == 8);

struct RawFileHeader {
  char magic[8];  // kRawMetaMagic
  uint32_t version;
  uint32_t reserved;
};
static_assert(sizeof(RawFileHeader) == 16);

struct RawProcessStart {
  uint32_t pid;
  uint32_t ppid;
  uint32_t clock;           // ClockKind
  uint32_t parent_n;        // fork child: the parent's incarnation number n, else ~0u
  uint64_t base_tick;       // absolute clock value that raw ticks are relative to
  uint64_t calib_tick;      // absolute clock value sampled together with...
  uint64_t calib_mono_ns;   // ...CLOCK_MONOTONIC, in ns
  uint64_t realtime_ns;     // CLOCK_REALTIME at start, ns since the epoch
  uint32_t exe_len;         // bytes of the exe path that follow
  uint32_t cmdline_len;     // bytes of the NUL-separated argv after it
  uint32_t flags;           // kRawProcessForked, ...
  uint32_t reserved;
};
static_assert(sizeof(RawProcessStart) == 64);
inline constexpr uint32_t kRawProcessForked = 1;
inline constexpr uint32_t kRawProcessAttached = 2;  // callscope attach loaded the runtime (1.7)

struct RawModule {
  uint64_t tick;        // when the map changed (relative to the process base)
  uint64_t load_bias;   // dlpi_addr: runtime address = ELF vaddr + load_bias
  uint64_t low;         // lowest PT_LOAD runtime address
  uint64_t high;        // one past the highest PT_LOAD runtime address
  uint8_t build_id[20];
  uint32_t build_id_len;
  uint32_t flags;       // kRawModuleUnload
  uint32_t path_len;
};
static_assert(sizeof(RawModule) == 64);
inline constexpr uint32_t kRawModuleUnload = 1;

enum class ExitHow : uint32_t {
  kUnknown = 0,
  kExited = 1,    // code valid
  kSignaled = 2,  // signal valid
  kExec = 3,      // replaced by exec (an incarnation of the same pid follows)
  kDetached = 4,  // callscope detached; the process ran on (1.7)
};

struct RawProcessExit {
  uint64_t tick;
  uint32_t how;    // ExitHow
  int32_t code;
  int32_t signal;
  uint32_t core_dumped;
};
static_assert(sizeof(RawProcessExit) == 24);

struct RawCalibration {
  uint64_t tick;     // absolute clock value
  uint64_t mono_ns;  // CLOCK_MONOTONIC at the same moment
};
static_assert(sizeof(RawCalibration) == 16);

struct RawChildStatus {
  uint32_t pid;
  uint32_t how;  // ExitHow
  int32_t code;
  int32_t signal;
  uint32_t core_dumped;
  uint32_t is_main;  // the program `record` started
  uint64_t mono_ns;  // when the recorder reaped it
};
static_assert(sizeof(RawChildStatus) == 32);

struct RawMark {
  uint64_t tick;
  uint32_t tid;
  uint32_t id;        // the kMark event's w1, unique in the process
  uint32_t text_len;  // bytes of text that follow
  uint32_t kind;      // kMarkKindMark, or kMarkKindTag (1.6): the text of a kTag id
};
static_assert(sizeof(RawMark) == 24);
inline constexpr uint32_t kMarkKindMark = 0;
inline constexpr uint32_t kMarkKindTag = 1;

struct RawClear {
  uint64_t seq;   // 1, 2, ... (RawProfHeader::clear_seq of a thread that applied it)
  uint64_t tick;
};
static_assert(sizeof(RawClear) == 16);

// A thread was given a name (pthread_setname_np, also on another thread's
// handle, or prctl(PR_SET_NAME)) after its thread file was made. The header's
// name is read when the thread starts and again at a clean exit; these
// records carry the names in between, and the last one of a thread that
// never exited cleanly (a killed process, or one that ended with the thread
// running).
struct RawThreadName {
  uint64_t tick;        // when it was named (relative to the process base)
  uint32_t tid;         // the thread named, not necessarily the caller
  uint32_t reserved;
  char name[16];        // the new name, NUL-padded (at most 15 bytes)
  char old_name[16];    // the name it had until then ("" when unknown)
};
static_assert(sizeof(RawThreadName) == 48);

// A thread that could not get its event file (or, in profile mode, its
// tree file): no space on the raw session's file system, no descriptor left
// (EMFILE), ... It runs untraced from its first call on; this record is all
// the trace knows of it, so that its absence is never silent. Its name is
// the one it had at that first call.
struct RawUntracedThread {
  uint64_t tick;        // its first call (relative to the process base)
  uint32_t tid;
  int32_t error;        // errno of the step that failed
  char name[16];        // from /proc/thread-self/comm, NUL-padded
};
static_assert(sizeof(RawUntracedThread) == 32);

// A stop (odd seq) or a start (even seq), written when it happens: seq
// counts them over the process's life, tick is when (relative to the
// process base).
struct RawSwitch {
  uint64_t seq;
  uint64_t tick;
};
static_assert(sizeof(RawSwitch) == 16);

enum class TraceMode : uint32_t { kRecord = 0, kProfile = 1 };
struct RawMode {
  uint32_t mode;      // TraceMode
  uint32_t flags;     // kRawModeFiltered, kRawModeStartOff
};
static_assert(sizeof(RawMode) == 8);
inline constexpr uint32_t kRawModeFiltered = 1;  // include/exclude/depth/duration/chrono filters were set
inline constexpr uint32_t kRawModeStartOff = 2;
inline constexpr uint32_t kRawModeUnwound = 4;  // record --unwind: frames from unwinding at allocations (1.6)

// ---- profile mode ------------------------------------------------------------
//
// t<tid>.prof: a RawProfHeader page, the thread's shadow stack (RawProfFrame
// [stack_capacity] at stack_offset) and its call tree (RawProfNode
// [node_capacity] at nodes_offset), all MAP_SHARED: the tree and the frames
// open at that moment survive the death of the process. Node 0 is the
// virtual root; a node's parent always has a smaller index. The runtime keeps
// a sentinel frame just before stack_offset (readers ignore it).

inline constexpr char kRawProfMagic[8] = {'C', 'S', 'R', 'A', 'W', 'P', 'F', '1'};
inline constexpr uint64_t kRawProfHeaderSize = 4096;

struct RawProfHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;      // kRawProfHeaderSize
  uint32_t pid;
  uint32_t tid;
  uint64_t node_count;       // nodes in use (release-stored after the node is written)
  uint64_t node_capacity;    // nodes the file has room for now
  uint64_t nodes_offset;     // bytes
  uint64_t stack_offset;     // bytes
  uint32_t stack_capacity;   // frames
  uint32_t depth;            // frames open now
  uint64_t dropped_calls;    // calls not given a node: the table was full
  uint64_t clear_seq;        // the last callscope_clear() this thread applied
  uint64_t start_tick;
  uint64_t end_tick;         // 0 while running or when the thread never exited cleanly
  uint64_t flags;            // kRawThreadMain
  char name[16];             // set when the thread exits
  uint64_t switches_seen;    // as RawThreadHeader::switches_seen
};
static_assert(sizeof(RawProfHeader) == 128);

// A node: one call path. Times are ticks; calls counts completed calls.
struct RawProfNode {
  uint64_t fn;               // absolute address of the function (0: the root)
  uint32_t parent;
  uint32_t hint;             // runtime only: the child looked up last
  uint64_t calls;
  uint64_t total;
  uint64_t self;
  uint64_t min;              // ~0 when no call
  uint64_t max;
  uint64_t first_tick;       // entry tick of the first call (~0 when none)
  uint64_t first;            // duration of that call
  uint32_t depth;            // 1 = outermost
  uint32_t flags;            // kProfNode*
  uint32_t next;             // runtime only: the sibling entered after this one last time
  uint32_t inherited;        // of `calls`, those already in progress at a start (1.8; before: 0)
};
static_assert(sizeof(RawProfNode) == 88);
inline constexpr uint32_t kProfNodeExcluded = 1;  // filtered out: its time counts in its parent
inline constexpr uint32_t kProfNodeChrono = 2;    // a chrono function: events are recorded below it
inline constexpr uint32_t kProfNodeOpen = 4;      // (snapshots) a call was in progress: counted, with its time so far
inline constexpr unsigned kProfNodeInheritedShift = 16;  // ProfileNodeRecord::flags: the inherited calls

struct RawProfFrame {
  uint64_t fn;
  uint64_t sp;               // caller's sp at the hook (bit 0: excluded frame, bit 1: chrono root)
  uint64_t tick;             // entry
  uint64_t child;            // ticks in counted callees so far
  uint64_t emit_end;         // event words written up to here by the entry (min-duration rewind)
  uint32_t node;
  uint32_t flags;            // kProfFrame*
};
static_assert(sizeof(RawProfFrame) == 48);
inline constexpr uint32_t kProfFrameExcluded = 1;  // not counted (filter, depth, full table)
inline constexpr uint32_t kProfFrameChrono = 2;    // opened a chrono region
inline constexpr uint32_t kProfFrameEmitted = 4;   // its entry event was written
inline constexpr uint32_t kProfFrameMin = 8;       // a minimum duration applies: the runtime's slow path closes it
// Entered while recording was stopped and open at the start: a call from
// the start on, counted in RawProfNode::inherited too (1.8).
inline constexpr uint32_t kProfFrameInherited = 1u << 18;

// dumps: snapshots, one after the other; each a RawDumpHeader, then per
// thread a RawDumpThread and its nodes. A snapshot cut short by a crash has
// fewer bytes than `bytes` says and is ignored.
inline constexpr char kRawDumpMagic[8] = {'C', 'S', 'R', 'A', 'W', 'D', 'P', '1'};
struct RawDumpHeader {
  char magic[8];
  uint32_t seq;       // 1, 2, ... in the session: every process counts in <session>/snapshots.seq
  uint32_t reason;    // DumpReason (runtime/control.h): 1 API, 2 ctl, 3 interval, 4 exit
  uint64_t tick;
  uint32_t threads;
  uint32_t reserved;
  uint64_t bytes;     // of the whole snapshot, this header included
};
static_assert(sizeof(RawDumpHeader) == 40);

struct RawDumpThread {
  uint32_t tid;
  uint32_t reserved;
  uint64_t nodes;
  uint64_t dropped_calls;
  uint64_t start_tick;
  char name[16];
};
static_assert(sizeof(RawDumpThread) == 48);

// `record` encodes the threads' events into the trace while the program
// runs (src/format/live_stream.h): the trace being written, with the clock
// and origin its ticks count from, and each thread file it takes events from
// with the thread index its blocks carry. `finish` of a session whose
// recorder died reads them to continue where the trace stops.
struct RawStream {
  uint64_t origin;    // absolute clock value of trace tick 0
  uint32_t clock;     // ClockKind
  uint32_t path_len;  // bytes of the trace's (temporary) path that follow
};
static_assert(sizeof(RawStream) == 16);

struct RawStreamThread {
  uint32_t index;     // thread index of the trace (kEvents aux0)
  uint32_t path_len;  // bytes of the path of the thread file, relative to the session
};
static_assert(sizeof(RawStreamThread) == 8);

struct RawRecorderInfo {
  uint64_t start_realtime_ns;
  uint32_t cwd_len;
  uint32_t cmdline_len;
};
static_assert(sizeof(RawRecorderInfo) == 16);

}  // namespace callscope::format
