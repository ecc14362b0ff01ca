// Reading what the runtime (and the recorder) left in a session directory:
// per-process metadata and per-thread raw event files. Used by `record` and
// `finish` to build the final trace; tolerant of a process that died at any
// instruction (torn last events, missing exit records).
#pragma once

#include <cstdint>
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
};

struct RawSession {
  std::string dir;
  std::vector<RawProcess> processes;  // sorted by (pid, incarnation)
  std::optional<RawRecorderInfo> recorder;
  std::string recorder_cwd;
  std::string recorder_cmdline;
  std::vector<RawCalibration> calibrations;  // from the recorder
  std::vector<RawChildStatus> child_statuses;
  std::vector<std::string> warnings;         // damage found while reading
};

Result<RawSession> read_raw_session(const std::string& dir);

// A decoded raw event (kSpBase is consumed by the decoder).
struct RawEvent {
  RawKind kind;
  uint64_t tick;  // relative to the process base
  uint64_t addr;  // kEntry*, kExitStray
  uint64_t sp;    // kEntry*: absolute stack pointer, 0 when unknown
  uint64_t arg;   // kLost: count; kMark: id
};

// One thread's raw event file, mapped read-only.
class RawThreadFile {
 public:
  static Result<std::unique_ptr<RawThreadFile>> open(const std::string& path);
  ~RawThreadFile();
  RawThreadFile(const RawThreadFile&) = delete;
  RawThreadFile& operator=(const RawThreadFile&) = delete;

  const RawThreadHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

  // Decodes the next event; false at the end of the data.
  bool next(RawEvent& e);
  uint64_t torn_events() const { return torn_; }      // half-written (crash point)
  uint64_t bad_words() const { return bad_words_; }   // words with an unknown kind

 private:
  RawThreadFile() = default;
  std::string path_;
  RawThreadHeader header_{};
  const uint64_t* words_ = nullptr;
  size_t n_words_ = 0;
  size_t i_ = 0;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  uint64_t sp_base_ = 0;
  uint64_t torn_ = 0;
  uint64_t bad_words_ = 0;
};

}  // namespace callscope::format
