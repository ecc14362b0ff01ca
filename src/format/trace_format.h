// The on-disk layout of callscope: the two headers that define every byte.
//
// Two layers:
//  1. The *raw* layout (format/raw_layout.h, included here), written by the
//     runtime inside the traced program while it runs.
//  2. The *final* trace file (v1), here, written by `callscope record` once
//     the program has ended: a header and a sequence of self-delimiting,
//     checksummed blocks; event blocks are delta-encoded columns compressed
//     with zstd.
//
// The runtime includes this header and nothing else of ours, so it must stay
// free of the C++ library (plain structs and constants only).
//
// Version history: docs/trace-format.md, one row per version with what it
// added and what an older reader makes of it (the one place it is kept).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "format/raw_layout.h"

namespace callscope::format {

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
inline constexpr uint16_t kTraceVersionMinor = 13;
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
  // 1.12 (record --events io): the block devices of the kIoStart events,
  // "MAJOR:MINOR NAME" lines ("254:0 vda"); empty: none known.
  StrRef block_devices;
  uint64_t reserved;
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
// record --events without sched (1.11): the kSysEvents blocks hold system
// calls or faults but no context switches -- when the threads ran or waited
// is not known (a 1.9 or 1.10 trace with kSysEvents has its switches).
inline constexpr uint32_t kInfoNoSwitches = 32;
// record --events (1.13 writers): which of the kernel's event groups were
// recorded, so that a reader can tell "none happened" from "not recorded"
// (query's syscall provider). kInfoEventGroups says the three flags after
// it are set as recorded; a trace written before says nothing, and a
// reader then goes by the events it holds.
inline constexpr uint32_t kInfoEventGroups = 64;
inline constexpr uint32_t kInfoSyscalls = 128;
inline constexpr uint32_t kInfoFaults = 256;
inline constexpr uint32_t kInfoIo = 512;

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
// Made by the reader, never written: a thread that the kernel's events
// (kSysEvents) name but that made no traced call -- a program without
// hooks under --sample, a library's thread. start_tick is its first such
// event, end_tick its process's end.
inline constexpr uint32_t kThreadKernelOnly = 16;

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
// of the block; the first: since first_tick) and arg (varints, as many as
// the kind has: below).
enum class SysKind : uint8_t {
  kSwitchOutBlocked = 1,   // left the CPU to wait (sleep, I/O, a lock, a stop). arg: the CPU
  kSwitchOutRunnable = 2,  // left the CPU still runnable (preempted, or yielded). arg: the CPU
  kSwitchIn = 3,           // got a CPU. arg: the CPU
  kLost = 4,               // records of this thread's CPU were dropped before this point. arg: how many
  // 1.10 (record's sched tracepoints and --events syscalls):
  kSleepState = 5,    // the state it left the CPU in, the kernel's sched_switch prev_state mask
                      // (0 running, 1 S sleeping, 2 D uninterruptible, ...; 0x100 preempted). arg: the mask
  kWakeup = 6,        // another thread made it runnable. arg: the waker's tid, then its pid
  kSyscallEnter = 7,  // a system call began. arg: its number, then its six raw arguments
  kSyscallExit = 8,   // a system call returned. arg: its number, then the result (zigzag)
  // 1.11 (record --events faults):
  kPageFault = 9,  // a page fault. arg: the address, then the instruction that took it, then flags
                   // (kFaultMajor, kFaultInKernel)
  kSample = 10,    // a CPU sample (record --sample HZ). arg: the instruction, then the period in ns of the
                   // thread's CPU time it stands for, times 2, plus 1 when the instruction is the kernel's
  // 1.12 (record --events io):
  kIoStart = 11,  // the thread began a block I/O request. arg: the device (the kernel's dev_t, MAJOR << 20 |
                  // MINOR), then the sector, the bytes, and its kind (kIoWrite, kIoFlush, ...)
  kIoDone = 12,   // a request the thread began completed (the time is the device's). arg: the device, then the
                  // sector, then the error (zigzag; 0: none)
  // 1.13 (record --sample HZ of a program without hooks):
  kSampleCaller = 13,  // a frame of the kSample before it, outward from its instruction. arg: an address in the
                       // function (a return address less one), or 0: the frames further out are not known
};
inline constexpr uint8_t kSysKindMax = 13;
inline constexpr uint64_t kIoWrite = 1;    // a write (else a read, when not a flush alone)
inline constexpr uint64_t kIoFlush = 2;    // a cache flush (alone: no data)
inline constexpr uint64_t kIoSync = 4;     // synchronous
inline constexpr uint64_t kIoMeta = 8;     // the file system's metadata
inline constexpr uint64_t kIoDiscard = 16; // a discard (trim)
inline constexpr uint64_t kIoFua = 32;     // forced unit access: written through the device's cache
inline constexpr uint64_t kIoOther = 64;   // neither read, write, flush nor discard (write-zeroes, zone management)
inline constexpr uint64_t kFaultMajor = 1;     // read from a file or swap (the thread waited for it)
inline constexpr uint64_t kFaultInKernel = 2;  // taken by the kernel for the thread, in a system call
struct SysColumnsHeader {
  uint32_t n_events;
  uint32_t kinds_bytes;
  uint32_t dt_bytes;
  uint32_t arg_bytes;
};
static_assert(sizeof(SysColumnsHeader) == 16);

}  // namespace callscope::format
