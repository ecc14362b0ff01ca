// The on-disk layout of callscope: the one header that defines every byte.
//
// Two layers live here:
//  1. The *raw* layout, written by the runtime inside the traced program while
//     it runs: one directory per process incarnation, holding an append-only
//     metadata file and one file of fixed-width event words per thread. The
//     thread files are file-backed MAP_SHARED memory, so whatever a thread
//     stored before the process died (SIGSEGV, abort, _exit, SIGKILL) is in
//     the page cache and therefore in the file.
//  2. The *final* trace file (v1), written by `callscope record` once the
//     program has ended: a header and a sequence of self-delimiting, checksummed
//     blocks; event blocks are delta-encoded columns compressed with zstd.
//
// The runtime includes this header and nothing else of ours, so it must stay
// free of the C++ library (plain structs and constants only).
//
// Version history: docs/trace-format.md, one row per version with what it
// added and what an older reader makes of it (the one place it is kept).
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

// ---------------------------------------------------------------------------
// 2. Final trace file, v1
// ---------------------------------------------------------------------------
//
//   FileHeader
//   Block*      each: BlockHeader + payload (zstd frame with checksum when
//               kBlockCompressed). The writer puts the kEvents blocks first
//               (thread by thread, each thread's blocks in order), then kInfo,
//               kProcesses, kModules, kThreads, and kEnd last; a reader indexes
//               every block header before it reads anything.
//
// A reader that meets a damaged block says where (block number, file offset),
// skips forward to the next valid block header and reads on.

inline constexpr char kTraceMagic[8] = {'C', 'A', 'L', 'L', 'S', 'C', 'P', '\x1a'};
inline constexpr uint16_t kTraceVersionMajor = 1;
inline constexpr uint16_t kTraceVersionMinor = 9;
// The first minor version whose header carries a check.
inline constexpr uint16_t kTraceMinorHeaderCheck = 3;

// File header. Everything is read from it before a single block: a damaged
// header would misread the whole trace (a ticks_per_ns of 1e-300 makes every
// duration 1e300 ns). Readers refuse a header whose fields are out of range
// -- header_size other than 64 (a later minor version: 64 to 4096, a
// multiple of 8), an unknown clock, ticks_per_ns not 1.0 for kMonotonic nor
// within [kMinTicksPerNs, kMaxTicksPerNs] for kTsc, flags or reserved bytes
// set, an origin past 2^63 ns -- and, from 1.3 on, a header whose check does
// not match: together they catch every single damaged byte of the 64.
struct FileHeader {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_size;      // sizeof(FileHeader)
  uint32_t clock;            // ClockKind
  uint32_t flags;            // none defined: 0
  double ticks_per_ns;       // trace ticks per nanosecond (1.0 for kMonotonic)
  uint64_t origin_mono_ns;   // CLOCK_MONOTONIC at trace tick 0
  uint64_t origin_realtime_ns;  // CLOCK_REALTIME at the start, 0 when unknown
  uint64_t reserved;
  uint32_t reserved2;
  uint32_t check;            // 1.3: header_check() of the bytes before this field
};
static_assert(sizeof(FileHeader) == 64);
static_assert(offsetof(FileHeader, check) == 60);
// A TSC from 10 MHz to 100 GHz: a rate outside is damage, not a clock.
inline constexpr double kMinTicksPerNs = 0.01;
inline constexpr double kMaxTicksPerNs = 100.0;

inline constexpr uint32_t kBlockMagic = 0x4b4c4243;  // "CBLK" little-endian

enum class BlockType : uint16_t {
  kInfo = 1,       // InfoRecord (count 1) + strings
  kProcesses = 2,  // ProcessRecord[count] + strings
  kModules = 3,    // ModuleRecord[count] + strings
  kThreads = 4,    // ThreadRecord[count] + strings
  kEvents = 5,     // aux0 = thread index; count = events; columns (below)
  kEnd = 6,        // EndRecord: the writer finished
  kProfile = 7,    // ProfileNodeRecord[count] of one thread in one snapshot:
                   // aux0 = thread index, aux1 = snapshot index, first_tick = its tick
  kDumps = 8,      // DumpRecord[count]: the snapshots, process by process, each's in time order
  kMarks = 9,      // MarkRecord[count] + strings
  kThreadNames = 10,  // ThreadNameRecord[count] + strings (trace 1.2)
  kResident = 11,     // ResidentRecord[count] + strings: the resident set by module (1.6, record --memory)
  kSysEvents = 12,    // what the kernel said of one thread (1.9): aux0 = its tid, aux1 = its process's pid
};
inline constexpr uint16_t kBlockCompressed = 1;
// No block holds more than this once decompressed (1 GiB): the writer refuses
// a larger one, and a reader takes a larger raw_size for damage before it
// allocates anything (an event block holds at most kEventsPerBlock events,
// some 70 MB; metadata is far smaller).
inline constexpr uint32_t kMaxBlockRawBytes = 1u << 30;

struct BlockHeader {
  uint32_t magic;         // kBlockMagic
  uint16_t type;          // BlockType
  uint16_t flags;         // kBlockCompressed
  uint32_t stored_size;   // payload bytes in the file
  uint32_t raw_size;      // payload bytes once decompressed
  uint32_t aux0;          // per type (kEvents: thread index)
  uint32_t count;         // records or events in the payload
  uint64_t first_tick;    // kEvents: tick of the first event; kProfile: the snapshot's
  uint32_t aux1;          // kProfile: snapshot index (into the kDumps records);
                          // kEvents: raw ring segments of the thread consumed up to
                          // the end of this block (written while the program ran), else 0
  uint32_t check;         // header_check() of the bytes before this field
};
static_assert(sizeof(BlockHeader) == 40);
static_assert(offsetof(BlockHeader, check) == 36);

// FNV-1a over the header bytes before `check`: catches a damaged header
// before its sizes are trusted.
inline uint32_t header_check(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

// Sets the check of a file header (1.3 on); writers call it last.
inline void seal_file_header(FileHeader& h) {
  h.check = header_check(&h, offsetof(FileHeader, check));
}

// Records of metadata blocks: the payload is
//   uint32 count, uint32 record_size, record_size * count bytes, string bytes.
// Strings are (offset, length) into the string bytes.
struct StrRef {
  uint32_t offset;
  uint32_t length;
};
static_assert(sizeof(StrRef) == 8);

struct InfoRecord {
  uint64_t start_realtime_ns;  // when `record` started the program
  uint64_t duration_ticks;     // first to last event (or program run time)
  uint32_t main_pid;
  uint32_t main_how;           // ExitHow of the program record started
  int32_t main_code;
  int32_t main_signal;
  uint32_t main_core_dumped;
  uint32_t flags;              // kInfoNotInstrumented, ...
  StrRef cmdline;              // NUL-separated argv of the program
  StrRef cwd;
  StrRef tool_version;         // "callscope 0.1.0"
  uint64_t reserved[2];
};
static_assert(sizeof(InfoRecord) == 80);
inline constexpr uint32_t kInfoNotInstrumented = 1;
inline constexpr uint32_t kInfoProfile = 2;   // recorded with --mode=profile: read the snapshots
inline constexpr uint32_t kInfoFiltered = 4;  // filters were set while recording
// record --memory --unwind (1.6): the frames were found by unwinding the stack
// at each allocation, not told by hooks: they say where allocations were
// made, not how often functions were called or for how long.
inline constexpr uint32_t kInfoUnwound = 8;
// callscope attach (1.7): the recording began when callscope attached to a
// running program (start_realtime_ns), not at its start.
inline constexpr uint32_t kInfoAttached = 16;

struct ProcessRecord {
  uint32_t pid;
  uint32_t ppid;
  uint32_t incarnation;      // n of <pid>.<n>: 0, then +1 for each exec
  int32_t parent_index;      // index of the forking process record, or -1
  uint64_t start_tick;
  uint64_t end_tick;
  uint32_t how;              // ExitHow
  int32_t code;
  int32_t signal;
  uint32_t core_dumped;
  StrRef exe;
  StrRef cmdline;            // NUL-separated
};
static_assert(sizeof(ProcessRecord) == 64);

// One load of a module. A library closed and loaded again (or another one
// loaded where it was) is another record, over the same addresses: an
// address means the module loaded at the time of its event.
struct ModuleRecord {
  uint32_t process_index;
  uint32_t flags;            // kModuleUnloaded when unload_tick is valid
  uint64_t load_bias;
  uint64_t low;
  uint64_t high;
  uint64_t load_tick;
  uint64_t unload_tick;
  uint8_t build_id[20];
  uint32_t build_id_len;
  StrRef path;
};
static_assert(sizeof(ModuleRecord) == 80);
inline constexpr uint32_t kModuleUnloaded = 1;

struct ThreadRecord {
  uint32_t process_index;
  uint32_t tid;
  uint64_t start_tick;
  uint64_t end_tick;         // last known tick of the thread
  uint64_t events;           // events in the final stream
  uint64_t calls;            // entry events
  uint64_t lost_events;
  uint64_t torn_events;      // half-written events found at a crash point
  uint32_t flags;            // kThreadMain, kThreadExitedCleanly, kThreadUntraced, kThreadUnwound
  uint32_t blocks;           // kEvents blocks of this thread
  StrRef name;               // the last name it had (1.2; before: at its exit, else at its start)
  int32_t untraced_error;    // 1.4, kThreadUntraced: the errno that kept it from being traced
  uint32_t reserved;
};
static_assert(sizeof(ThreadRecord) == 80);
inline constexpr uint32_t kThreadMain = 1;
inline constexpr uint32_t kThreadExitedCleanly = 2;
// 1.4: the thread ran without being recorded (RawUntracedThread): it has no
// events; start_tick is its first call, end_tick the same (its end is
// unknown).
inline constexpr uint32_t kThreadUntraced = 4;
// 1.7: the thread's calls were unwound at allocations (record --memory
// --unwind; its process's RawMode had kRawModeUnwound), not told by hooks.
// A trace with kInfoUnwound and no thread flagged was written before the
// flag: every thread's calls were unwound.
inline constexpr uint32_t kThreadUnwound = 8;

// A snapshot of every thread's call tree of one process.
struct DumpRecord {
  uint32_t process_index;
  uint32_t seq;              // the K of report --dump K: the session's numbering (docs/trace-format.md)
  uint32_t reason;           // 1 API, 2 ctl, 3 interval, 4 exit (final state, also after a crash)
  uint32_t threads;          // kProfile blocks of this snapshot
  uint64_t tick;
};
static_assert(sizeof(DumpRecord) == 24);

// One node of a snapshot (RawProfNode without the runtime's fields).
struct ProfileNodeRecord {
  uint64_t fn;
  uint32_t parent;           // index into the same block; the root (0) is its own parent
  uint32_t flags;            // kProfNodeExcluded, kProfNodeOpen; bits 16-31 (1.8): of `calls`, those
                             // already in progress at a start (kProfNodeInheritedShift; at most 65535)
  uint64_t calls;
  uint64_t total;
  uint64_t self;
  uint64_t min;
  uint64_t max;
  uint64_t first_tick;
  uint64_t first;
};
static_assert(sizeof(ProfileNodeRecord) == 72);

struct MarkRecord {
  uint64_t tick;
  uint32_t thread_index;     // ~0u when the thread has no record
  uint32_t process_index;
  uint32_t id;
  uint32_t kind;             // kMarkKindMark, or kMarkKindTag (1.6)
  StrRef text;
};
static_assert(sizeof(MarkRecord) == 32);

// One line of a resident-set sample (format/resident.h): a process's
// memory of one kind in one file (or anonymous, heap, stack) at `tick`,
// in KiB. A sample is the records of one process with the same tick, in
// time order.
struct ResidentRecord {
  uint64_t tick;
  uint32_t process_index;
  uint8_t kind;    // format::ResidentKind
  uint8_t reason;  // format::ResidentReason
  uint16_t reserved;
  uint64_t rss_kb;
  uint64_t pss_kb;
  StrRef path;
};
static_assert(sizeof(ResidentRecord) == 40);

// The names of a thread that was named while it ran, in time order: the
// name it started with (tick: the thread's start), then each new name with
// the tick it was given. Threads never renamed have no records. The records
// are sorted by thread, then tick; the last of a thread is ThreadRecord::name
// unless the thread renamed itself later by other means (seen at its exit).
struct ThreadNameRecord {
  uint64_t tick;
  uint32_t thread_index;
  uint32_t reserved;
  StrRef name;
};
static_assert(sizeof(ThreadNameRecord) == 24);

struct EndRecord {
  uint64_t total_events;
  uint64_t total_blocks;
};
static_assert(sizeof(EndRecord) == 16);

// Final event kinds (the `kinds` column of an event block).
enum class EventKind : uint8_t {
  kEntry = 1,
  kExit = 2,            // normal return of the top frame
  kExitUnwound = 3,     // top frame skipped by longjmp or an exception
  kExitTruncated = 4,   // top frame still open when its thread's stream ended
  kExitStray = 5,       // an exit without entry (fn column holds the address)
  kLost = 6,            // arg column: events dropped here
  kEntryInherited = 7,  // frame opened before this stream began (fork), or inside a gap
  kMark = 8,            // arg column: mark id (MarkRecord)
  kPause = 9,           // recording stopped: a gap begins (1.2)
  kResume = 10,         // the gap that began at the last kLost or kPause ends (1.2)
  kAlloc = 11,          // arg column: zigzag ptr delta, size, AllocOp (1.5)
  kFree = 12,           // arg column: zigzag ptr delta, AllocOp (1.5)
  kTag = 13,            // arg column: tag id, 0: the last tag pushed is popped (1.6)
  kWait = 14,           // arg column: ticks the thread waited for the recorder, ending at this tick (1.8)
};
inline constexpr uint8_t kMaxEventKind = 14;
constexpr bool is_memory(EventKind k) { return k == EventKind::kAlloc || k == EventKind::kFree; }

// Gaps (1.2). Events of a stream can stop for a while: dropped (no space, a
// recorder that cannot keep up under --drop-when-behind, a recorder killed)
// or not recorded (callscope_stop / ctl stop until start). A gap reads
//     kLost (arg: events dropped) | kPause      at t0, the gap's start
//     kExitTruncated*                           at t0: frames that ended inside the gap
//     kEntryInherited*                          at t1: frames that began inside it, still open
//     kResume                                   at t1, the gap's end
// Frames open before and after go on through it: their totals are exact.
// The gap's time belongs to none of them as self time: a loss's time goes to
// the unknown calls that were dropped (analyses show it as "[lost events]"
// under the innermost frame that went on through it); a pause's time counts
// nowhere. A kLost without a kResume is a stream cut short: the frames still
// open close as kExitTruncated at t0.
//
// Waits (1.8). A thread that found its ring full waited, inside a hook, for
// the recorder to drain it: kWait at the wait's end, its arg the ticks
// waited. That time is the tracer's, not the program's: analyses take it
// out of every frame open then (as a pause's) and show it on its own, as
// "[waited for recorder]" at the thread's top level.

constexpr bool is_entry(EventKind k) {
  return k == EventKind::kEntry || k == EventKind::kEntryInherited;
}
// The kinds whose event has a value a call tree needs: an entry's function
// address, a loss's count, a wait's ticks (TraceReader::CallColumns).
constexpr bool carries_value(EventKind k) {
  return is_entry(k) || k == EventKind::kLost || k == EventKind::kWait;
}
// How many values an event has where memory events are kept too (query's
// alloc provider, TraceReader::CallSink::wants_memory): an alloc two (its
// block | AllocOp << 56, its size), a free one (its block | AllocOp << 56),
// the rest as carries_value().
constexpr unsigned value_count(EventKind k) {
  return k == EventKind::kAlloc ? 2 : (k == EventKind::kFree || carries_value(k)) ? 1 : 0;
}
inline constexpr unsigned kMemoryValueOpShift = 56;
constexpr bool is_exit(EventKind k) {
  return k == EventKind::kExit || k == EventKind::kExitUnwound || k == EventKind::kExitTruncated;
}

// Event block payload, before compression:
//   EventColumnsHeader
//   fn table:  n_functions varints, zigzag deltas of addresses
//   kinds:     n_events bytes (EventKind)
//   dt:        varint tick delta from the previous event of the thread
//   fn:        varint index into the fn table (kEntry*, kExitStray)
//   sp:        varint zigzag of (parent_sp - sp) / kSpUnit for entries, where
//              parent_sp is the sp of the frame on top of the stack (0 if none)
//   arg:       varint (kLost: count; kMark, kTag: id; kWait: ticks); kAlloc: three varints --
//              zigzag of (ptr - the previous memory event's ptr in the
//              block, 0 at its start), size, AllocOp; kFree: two -- the
//              zigzag ptr delta, AllocOp
// Exits carry no address: they close the frame on top of the stack, which
// the reader keeps per thread across blocks.
struct EventColumnsHeader {
  uint32_t n_events;
  uint32_t n_functions;
  uint32_t fn_table_bytes;
  uint32_t kinds_bytes;
  uint32_t dt_bytes;
  uint32_t fn_bytes;
  uint32_t sp_bytes;
  uint32_t arg_bytes;
};
static_assert(sizeof(EventColumnsHeader) == 32);

inline constexpr uint32_t kEventsPerBlock = 1u << 20;

// kSysEvents (1.9): the kernel's events of one thread, from record's perf
// rings (recorder/perf_rings.h). aux0 = the thread's tid, aux1 = its
// process's pid (a reader puts them with the thread record of that pid and
// tid whose life holds them), count = events, first_tick = the first
// event's CLOCK_MONOTONIC time in ns (not a trace tick: the reader puts it
// on the trace's clock through FileHeader.origin_mono_ns and ticks_per_ns,
// the calibration of the whole run). Payload: SysColumnsHeader, then the
// columns kinds (u8 SysKind each), dt (varint ns since the previous event
// of the block; the first: since first_tick) and arg (a varint per event:
// a switch's CPU; a loss's count of records dropped).
enum class SysKind : uint8_t {
  kSwitchOutBlocked = 1,   // left the CPU to wait (sleep, I/O, a lock, a stop)
  kSwitchOutRunnable = 2,  // left the CPU still runnable (preempted, or yielded)
  kSwitchIn = 3,           // got a CPU
  kLost = 4,               // records of this thread's CPU were dropped before this point (arg: how many)
};
inline constexpr uint8_t kSysKindMax = 4;
struct SysColumnsHeader {
  uint32_t n_events;
  uint32_t kinds_bytes;
  uint32_t dt_bytes;
  uint32_t arg_bytes;
};
static_assert(sizeof(SysColumnsHeader) == 16);

}  // namespace callscope::format
