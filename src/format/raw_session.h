// Reading what the runtime (and the recorder) left in a session directory:
// per-process metadata and per-thread raw event files. Used by `record` and
// `finish` to build the final trace; tolerant of a process that died at any
// instruction (torn last events, missing exit records).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "format/trace_format.h"

namespace callscope::format {

struct RawModuleEntry {
  RawModule record;
  std::string path;  // empty for an unload record
};

struct RawProcess {
  std::string dir;             // absolute path of <pid>.<n>
  uint32_t pid = 0;
  uint32_t incarnation = 0;    // n
  bool has_start = false;
  RawProcessStart start{};
  std::string exe;
  std::string cmdline;         // NUL-separated
  std::vector<RawModuleEntry> modules;
  std::optional<RawProcessExit> exit;
  std::vector<RawCalibration> calibrations;
  std::vector<std::string> thread_files;  // absolute paths, sorted
  // Profile mode and marks.
  std::optional<RawMode> mode;
  struct Mark {
    RawMark record;
    std::string text;
  };
  std::vector<Mark> marks;
  std::vector<std::string> prof_files;    // t<tid>.prof, absolute paths, sorted
  std::vector<RawClear> clears;           // callscope_clear() calls, in order
  std::vector<RawSwitch> switches;        // stops and starts, in order
  std::vector<RawThreadName> thread_names;  // names given while threads ran, in order
  std::vector<RawUntracedThread> untraced;  // threads that ran without an event file, in order
  std::string dumps_file;                 // empty when the process wrote no snapshot
};

struct RawSession {
  std::string dir;
  std::vector<RawProcess> processes;  // sorted by (pid, incarnation)
  std::optional<RawRecorderInfo> recorder;
  std::string recorder_cwd;
  std::string recorder_cmdline;
  std::vector<RawCalibration> calibrations;  // from the recorder
  std::vector<RawChildStatus> child_statuses;
  // The live stream of `record` (RawStream): its trace and thread files.
  std::optional<RawStream> stream;
  std::string stream_path;
  std::vector<std::pair<uint32_t, std::string>> stream_threads;  // (index, path relative to dir)
  std::vector<std::string> warnings;         // damage found while reading
};

Result<RawSession> read_raw_session(const std::string& dir);

// Orders thread files (t<tid>[.<n>].ev, t<tid>.prof; full paths or names)
// by tid as a number, then reuse count: the order thread indexes are given
// in. As text, t100000.ev would sort before t99999.ev and a worker could
// become thread 0 once tids pass a power of ten.
bool thread_file_before(const std::string& a, const std::string& b);
void sort_thread_files(std::vector<std::string>& files);

// The session directory a path of a running process's runtime lies in: a
// process directory "<dir>/<pid>.<n>" (held open), or a file the runtime
// makes in one and maps or holds open ("meta", "dumps", "t<tid>[.<k>].ev",
// "t<tid>.spill", "t<tid>.prof"); nullopt for any other path, and for one
// of a file since removed (" (deleted)", as /proc shows it). How `ctl`,
// `query -p` and `attach` tell the session of a process from
// /proc/PID/maps and /proc/PID/fd: a program can overwrite its environment,
// not those.
std::optional<std::string> session_of_path(const std::string& path);

// Appends one record (header, body, extra bytes, padding) to a meta file
// opened with O_APPEND, in one write(2). Nothing when fd < 0.
void append_meta_record(int fd, RawMetaType type, const void* body, size_t size, const std::string& extra = {});

// The kProcessStart record of a process directory's meta file.
Result<RawProcessStart> read_process_start(const std::string& process_dir);

// One thread's tree: from a snapshot in `dumps`, or live from t<tid>.prof.
struct RawTree {
  uint32_t tid = 0;
  uint64_t start_tick = 0;
  uint64_t end_tick = 0;                // .prof only: 0 when it did not exit cleanly
  uint64_t dropped_calls = 0;
  std::vector<RawProfNode> nodes;
  std::vector<RawProfFrame> open;       // .prof only: frames open when it was last written
  uint64_t clear_seq = 0;               // .prof only: the last clear the thread applied
  uint64_t switches_seen = 0;           // .prof only: the last stop or start it acted on
  uint64_t flags = 0;                   // .prof only: kRawThreadMain
  char name[16] = {};                   // .prof only: set when the thread exited
};

// Reads t<tid>.prof (a process that died mid-update leaves at most the last
// node half-written; node_count is published after the node).
Result<RawTree> read_prof_file(const std::string& path);

// Calls `f` for each complete snapshot of a `dumps` file, in order; a
// snapshot cut short (the process died while writing it) ends the file,
// with a warning.
struct RawSnapshot {
  RawDumpHeader header;
  std::vector<RawTree> threads;
};
Status read_dumps(const std::string& path, std::vector<std::string>& warnings,
                  const std::function<Status(RawSnapshot&)>& f);

// A decoded raw event (kSpBase is consumed by the decoder).
struct RawEvent {
  RawKind kind;
  uint64_t tick;  // relative to the process base
  uint64_t addr;  // kEntry*, kExitStray; kAlloc, kFree: the block
  uint64_t sp;    // kEntry*: absolute stack pointer, 0 when unknown
  uint64_t arg;   // kLost: count; kMark: id; kAlloc: size
  uint8_t op = 0;  // kAlloc, kFree: the AllocOp
};

// Decodes raw event words: kSpBase is consumed here, zero words are skipped
// (the unused tail of a segment or chunk, or a slot never filled), torn and
// unknown words are counted. Keeps the stack-pointer base across calls, so a
// stream may be fed in pieces (ring segments).
struct RawDecoder {
  uint64_t sp_base = 0;
  uint64_t torn = 0;       // half-written (crash point)
  uint64_t bad_words = 0;  // words with an unknown kind
  // Decodes the next event of words[i..n); false at the end of them.
  bool next(const uint64_t* words, size_t n, size_t& i, RawEvent& e);
};

// About how many events `segments` ring segments of `segment_bytes` held
// (an entry takes two words, an exit one).
inline uint64_t ring_events_estimate(uint64_t segments, uint64_t segment_bytes) {
  return segments * (segment_bytes / 8) * 2 / 3;
}

// One thread's raw event file, mapped read-only.
class RawThreadFile {
 public:
  // Ring mode: `first_segment` is the first segment to read (those before it
  // were streamed into the trace while the program ran).
  static Result<std::unique_ptr<RawThreadFile>> open(const std::string& path, uint64_t first_segment = 0);
  ~RawThreadFile();
  RawThreadFile(const RawThreadFile&) = delete;
  RawThreadFile& operator=(const RawThreadFile&) = delete;

  const RawThreadHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

  // Decodes the next event; false at the end of the data.
  bool next(RawEvent& e);
  uint64_t torn_events() const { return dec_.torn; }      // half-written (crash point)
  uint64_t bad_words() const { return dec_.bad_words; }   // words with an unknown kind
  // Ring mode: segments no longer in the ring before the first one read
  // (taken by a recorder that left no trace of them), segments missing
  // between two read (complete segments holding nothing: given back by a
  // recorder whose block of them is gone, or never written), and segments
  // missing at the end (a file cut short).
  uint64_t missing_before() const { return missing_before_; }
  uint64_t missing_inside() const { return missing_inside_; }
  uint64_t missing_after() const { return missing_after_; }
  // About how many events `segments` held (an entry takes two words, an exit one).
  uint64_t events_estimate(uint64_t segments) const { return ring_events_estimate(segments, header_.segment_bytes); }
  // Grow mode: bytes of event chunks the header says the file held, beyond
  // its end (a file cut short); and about how many events they held.
  uint64_t missing_bytes() const { return missing_bytes_; }
  uint64_t missing_bytes_events() const { return missing_bytes_ / 8 * 2 / 3; }
  // After next() returned false: whether segments are missing before the
  // next span of the stream (then `lost_events` is about how many events
  // they held, and next() goes on after them), or the stream is at its end.
  bool take_gap(uint64_t& lost_events);
  // What is missing, in words ("" when nothing): for a warning.
  std::string damage() const;

 private:
  RawThreadFile() = default;
  std::string path_;
  RawThreadHeader header_{};
  // The stream, as spans of words read in order: grow mode has one (the
  // file after its header); ring mode has ring segments.
  struct Span {
    const uint64_t* words;
    size_t n;
    uint64_t missing_before;  // segments missing between the previous span and this one
  };
  std::vector<Span> spans_;
  size_t span_ = 0;
  const uint64_t* words_ = nullptr;  // the current span
  size_t n_words_ = 0;
  size_t i_ = 0;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  uint64_t missing_before_ = 0;
  uint64_t missing_inside_ = 0;
  uint64_t missing_after_ = 0;
  uint64_t missing_bytes_ = 0;
  bool next_span();
  RawDecoder dec_;
};

// Inline: they run once per event of every recording.
inline bool RawDecoder::next(const uint64_t* words, size_t n, size_t& i, RawEvent& e) {
  while (i < n) {
    const uint64_t w0 = words[i];
    if (w0 == 0) {
      ++i;
      continue;
    }
    const uint8_t k = static_cast<uint8_t>(w0 & 0xff);
    if (!raw_kind_valid(k)) {
      ++bad_words;
      ++i;
      continue;
    }
    const auto kind = static_cast<RawKind>(k);
    const unsigned nw = raw_event_words(kind);
    if (nw >= 2 && (i + nw > n || words[i + 1] == 0 || (nw == 3 && words[i + 2] == 0))) {
      ++torn;  // w0 stored, the rest not: the process died between the stores
      i += nw;
      continue;
    }
    e.kind = kind;
    e.tick = w0 >> kRawKindBits;
    e.addr = 0;
    e.sp = 0;
    e.arg = 0;
    const uint64_t w1 = nw >= 2 ? words[i + 1] : 0;
    const uint64_t w2 = nw == 3 ? words[i + 2] : 0;
    i += nw;
    e.op = 0;
    switch (kind) {
      case RawKind::kSpBase:
        sp_base = w1;
        continue;
      case RawKind::kEntry:
      case RawKind::kEntryInherited: {
        e.addr = w1 & kRawAddrMask;
        const auto rel = static_cast<int16_t>(static_cast<uint16_t>(w1 >> 48));
        e.sp = rel == -32768 ? 0 : sp_base - static_cast<int64_t>(rel) * static_cast<int64_t>(kSpUnit);
        return true;
      }
      case RawKind::kExitStray:
        e.addr = w1;
        return true;
      case RawKind::kLost:
      case RawKind::kMark:
      case RawKind::kWait:
        e.arg = w1;
        return true;
      case RawKind::kTag:
        e.arg = w1 == kRawTagPop ? 0 : w1;
        return true;
      case RawKind::kAlloc:
      case RawKind::kFree:
        e.addr = w1 & kRawAddrMask;
        e.op = static_cast<uint8_t>(w1 >> 56);
        e.arg = w2 ? w2 - 1 : 0;
        if (!alloc_op_valid(e.op)) {
          ++bad_words;
          continue;
        }
        return true;
      default:
        return true;
    }
  }
  return false;
}

inline bool RawThreadFile::next(RawEvent& e) {
  for (;;) {
    if (dec_.next(words_, n_words_, i_, e)) return true;
    // At a gap, stop: the caller marks it (take_gap).
    if (span_ < spans_.size() && spans_[span_].missing_before) return false;
    if (!next_span()) return false;
  }
}

}  // namespace callscope::format
