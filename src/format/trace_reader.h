// Reading a final trace file: the one reader every command uses.
//
// open() maps the file and indexes every block header; metadata blocks are
// decoded at once, event blocks on demand, one block in memory at a time, so
// memory does not grow with the number of events. Damage (a bad header, a
// payload that fails its checksum, a truncated file) is recorded in
// problems() with the block number and file offset, and reading goes on with
// what is intact.
//
// Records whose checksums hold can still name what the trace does not have
// (a module of process 4294967295: a crafted file, or a writer's bug). Every
// index, count and size read from the file is checked against what the
// trace holds before anything uses it (check_references() in
// trace_reader.cpp): by default open() refuses such a trace with one
// message ("damaged trace: ..."), so that no command indexes past a table;
// `info` opens it with Damage::kList, which lists each in problems() and
// points the record at a placeholder, so the rest can still be described.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "format/sys_events.h"
#include "format/trace_format.h"

struct ZSTD_DCtx_s;

namespace callscope::format {

struct TraceEvent {
  EventKind kind;
  uint32_t depth;  // depth of the frame entered or closed: 1 = outermost; memory events: the frames open
  uint64_t tick;   // trace ticks since the origin
  uint64_t addr;   // entries, exits (the frame closed), stray exits (0 if unknown); kAlloc, kFree: the block
  uint64_t sp;     // entries and exits: the frame's stack pointer (0 if unknown)
  uint64_t arg;    // kLost: events dropped; kMark: its id; kAlloc: the block's size
  uint8_t op = 0;  // kAlloc, kFree: the AllocOp
};

struct TraceInfo {
  InfoRecord record{};
  std::vector<std::string> argv;
  std::string cwd;
  std::string tool_version;
  // 1.12: the block devices of the I/O requests, by the kernel's dev_t.
  std::map<uint32_t, std::string> block_devices;
  // A device's name ("vda"), or "MAJOR:MINOR" when the trace does not say.
  std::string block_device(uint64_t dev) const;
};

struct ProcessInfo {
  ProcessRecord record{};
  std::string exe;
  std::vector<std::string> argv;
};

struct ModuleInfo {
  ModuleRecord record{};
  std::string path;
  std::string build_id;  // lowercase hex, empty when none
};

struct ThreadInfo {
  ThreadRecord record{};
  std::string name;  // the last name it had
  // A thread named while it ran (trace 1.2): the name it started with, then
  // each new name, with the tick it was given; empty for a thread never renamed.
  struct Named {
    uint64_t tick;
    std::string name;
  };
  std::vector<Named> names;
};

struct MarkInfo {
  MarkRecord record{};
  std::string text;
};

struct BlockRef {
  uint32_t number;  // 0-based position among the blocks of the file
  uint64_t offset;  // of the block header in the file
  BlockHeader header;
};

class TraceReader {
 public:
  enum class Damage {
    kRefuse,  // records naming what the trace does not hold: open() fails
    kList,    // listed in problems(), each pointed at a placeholder (info)
  };
  static Result<std::unique_ptr<TraceReader>> open(const std::string& path, Damage damage = Damage::kRefuse);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // A trace being recorded (query -c): no file behind it. Its metadata is
  // what the recorder has seen so far, and grows, through the mutable_
  // accessors, while the program runs; its events are handed to whoever
  // reads them, not read through this reader.
  static std::unique_ptr<TraceReader> growing(const FileHeader& header, const TraceInfo& info);
  std::vector<ProcessInfo>& mutable_processes() { return processes_; }
  std::vector<ModuleInfo>& mutable_modules() { return modules_; }
  std::vector<ThreadInfo>& mutable_threads() { return threads_; }

  const std::string& path() const { return path_; }
  const FileHeader& header() const { return header_; }
  const TraceInfo& info() const { return info_; }
  const std::vector<ProcessInfo>& processes() const { return processes_; }
  // Process `index`; an empty one (pid 0, no exe) when a damaged trace lost
  // its record.
  const ProcessInfo& process(uint32_t index) const {
    static const ProcessInfo kUnknown{};
    return index < processes_.size() ? processes_[index] : kUnknown;
  }
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  const std::vector<ThreadInfo>& threads() const { return threads_; }
  const std::vector<BlockRef>& blocks() const { return blocks_; }
  // Profile mode: the snapshots, in the order written (each process's own,
  // ending with its final state), and the marks, in time order.
  const std::vector<DumpRecord>& dumps() const { return dumps_; }
  const std::vector<MarkInfo>& marks() const { return marks_; }
  // Allocation tags (callscope_tag_push, 1.6): the text of each kTag id.
  const std::vector<MarkInfo>& tags() const { return tags_; }
  // Resident-set samples (record --memory, 1.6), in time order per process.
  struct Resident {
    ResidentRecord record{};
    std::string path;
  };
  const std::vector<Resident>& resident() const { return resident_; }
  bool is_profile() const { return (info_.record.flags & kInfoProfile) != 0 || !dumps_.empty(); }
  // The call tree of `thread` in snapshot `dump` (empty when the thread is
  // not in it); nodes come parent first, node 0 is the root.
  Result<std::vector<ProfileNodeRecord>> read_tree(uint32_t dump, uint32_t thread);
  // The threads that have a tree in snapshot `dump`.
  std::vector<uint32_t> tree_threads(uint32_t dump) const;
  uint64_t file_size() const { return size_; }
  bool complete() const { return complete_; }
  // Damage found so far, each naming where ("block 7 at offset 1234: ...").
  const std::vector<std::string>& problems() const { return problems_; }

  double ticks_to_ns(uint64_t ticks) const { return static_cast<double>(ticks) / header_.ticks_per_ns; }

  // Decompresses every event and call-tree block once to check its
  // checksum (about 1 GB/s of raw data), and each call tree's shape, as
  // read_tree() would; damage is added to problems(). Returns the blocks
  // found bad.
  size_t verify_payloads();

  // Streams the events of thread `thread` in order; `f` returns false to stop.
  // A damaged block is reported in problems() and skipped.
  Status for_each_event(uint32_t thread, const std::function<bool(const TraceEvent&)>& f);
  // A trace cut short (a recorder that died while streaming) has event
  // blocks but no thread records yet: after this, threads are read by index
  // whether listed or not.
  void allow_unlisted_threads() { unlisted_threads_ = true; }
  // The same, a batch of up to kEventBatch events per call: for analyses that
  // touch every event, one indirect call per batch instead of per event.
  static constexpr size_t kEventBatch = 8192;
  Status for_each_event_batch(uint32_t thread, const std::function<bool(const TraceEvent*, size_t)>& f);
  // The same, decoded straight into buffers the caller hands out (a
  // pipeline whose consumer runs on another thread copies nothing).
  struct EventSink {
    // Room for kEventBatch events; nullptr stops.
    virtual TraceEvent* buffer() = 0;
    // The first n events of the last buffer are ready; false stops.
    virtual bool commit(size_t n) = 0;

   protected:
    ~EventSink() = default;
  };
  Status for_each_event_into(uint32_t thread, EventSink& sink);
  // What a call tree needs of each event, column by column, a third of
  // TraceEvent's bytes: every event's kind and tick; a value, in order, for
  // each event whose kind carries_value() (an entry's function address, a
  // loss's count). Stack pointers and depths are not decoded; an exit with
  // no frame open is kExitStray, as above.
  struct CallColumns {
    EventKind* kinds;
    uint64_t* ticks;
    uint64_t* values;
  };
  struct CallSink {
    // Room for kEventBatch events in each column; kinds == nullptr stops.
    virtual CallColumns buffer() = 0;
    // The first n events (and n_values values) of the last buffer are
    // ready; false stops.
    virtual bool commit(size_t n, size_t n_values) = 0;
    // Memory events too (kAlloc, kFree, with format::value_count() values
    // each): then `values` must have room for 2 * kEventBatch.
    virtual bool wants_memory() const { return false; }

   protected:
    ~CallSink() = default;
  };
  Status for_each_call_event_into(uint32_t thread, CallSink& sink);

  // The kernel's events of thread `thread` (trace 1.9, kSysEvents: record's
  // context switches), in time order; empty for a trace without them.
  Result<std::vector<SysEvent>> sys_events(uint32_t thread);
  bool has_sys_events() const;
  // Whether they have the threads' context switches: when each ran and
  // waited (not so for record --events syscalls or faults without sched).
  bool has_switches() const;
  // Whether it has a group of the kernel's events (kInfoSyscalls: record
  // --events syscalls; kInfoFaults; kInfoIo), even if none happened: the
  // header says so in a trace written since kInfoEventGroups; an older one
  // has them if it holds one.
  bool has_event_group(uint32_t group);
  // A CLOCK_MONOTONIC time as a trace tick (0 before the origin).
  uint64_t mono_to_tick(uint64_t mono_ns) const;

 private:
  // Threads the kernel's events name that have no thread record (no
  // traced call): kThreadKernelOnly.
  void add_kernel_only_threads();
  TraceReader() = default;
  Status index_blocks();
  template <class Out>
  Status decode_events(uint32_t thread, Out& out);
  Result<std::vector<uint8_t>> payload(const BlockRef& b);
  Status payload_into(const BlockRef& b, std::vector<uint8_t>& out, ZSTD_DCtx_s* dctx);
  Status read_metadata();
  Status check_references(Damage damage);
  Status decode_tree(const BlockRef& b, std::vector<ProfileNodeRecord>& out);
  void problem(const BlockRef& b, const std::string& what);

  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  FileHeader header_{};
  TraceInfo info_;
  std::vector<ProcessInfo> processes_;
  std::vector<ModuleInfo> modules_;
  std::vector<ThreadInfo> threads_;
  std::vector<BlockRef> blocks_;
  std::vector<DumpRecord> dumps_;
  std::vector<MarkInfo> marks_;
  std::vector<MarkInfo> tags_;
  std::vector<Resident> resident_;
  std::vector<BlockRef> profile_blocks_;
  std::vector<std::string> problems_;
  // Whether a table's block was read, and whether one was damaged: indexes
  // into a table are checked only where it is intact.
  struct Table {
    bool read = false, lost = false;
    bool intact() const { return read && !lost; }
  };
  Table processes_table_, threads_table_, dumps_table_;
  std::vector<std::pair<ThreadNameRecord, std::string>> names_;  // until the thread table is checked
  bool complete_ = false;
  bool unlisted_threads_ = false;
};

// Bytes as lowercase hex (build-ids: ModuleInfo::build_id).
std::string hex_string(const uint8_t* p, size_t n);

// Splits a NUL-separated argument list.
std::vector<std::string> split_nul(const std::string& s);

}  // namespace callscope::format
