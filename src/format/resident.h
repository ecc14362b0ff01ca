// The resident set of a process by module (issue 12, WPA's resident-set
// view): /proc/PID/smaps read into, per mapped file, its code (executable
// mappings) and its data (the rest), and the anonymous memory, heap and
// stacks -- each as Rss and Pss. `record --memory` samples it at the start,
// at every dlopen, every --rss-interval and at the exit of each process
// (docs/memory.md, "Resident set").
//
// In the raw session a process directory holds the samples in
// `resident.txt`, appended by the recorder (periodic ones) and by the
// runtime (start, dlopen, exit: it copies /proc/self/smaps whole into
// `smaps.<mono_ns>.<reason>`, read here at finalization).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace callscope::format {

enum class ResidentKind : uint8_t {
  kCode = 1,   // executable mappings of a file
  kData = 2,   // the file's other mappings (read-only data, .data, .bss)
  kAnon = 3,   // anonymous mappings (malloc's arenas and big blocks, thread stacks, mmap)
  kHeap = 4,   // [heap] (brk)
  kStack = 5,  // [stack] (the main thread's)
  kOther = 6,  // [vdso], [vvar], shared memory, ...
};
const char* resident_kind_name(ResidentKind k);  // "code", "data", ...

enum class ResidentReason : uint8_t { kStart = 1, kDlopen = 2, kInterval = 3, kExit = 4 };
const char* resident_reason_name(ResidentReason r);  // "start", "dlopen", ...
bool parse_resident_reason(std::string_view name, ResidentReason& out);

struct ResidentEntry {
  ResidentKind kind = ResidentKind::kOther;
  uint64_t rss_kb = 0, pss_kb = 0;
  std::string path;  // the file, or "" for anonymous memory, "[heap]", "[stack]", "[vdso]"
};

struct ResidentSample {
  uint64_t mono_ns = 0;
  ResidentReason reason = ResidentReason::kInterval;
  std::vector<ResidentEntry> entries;  // one per (path, kind), in the order first mapped
};

// /proc/PID/smaps (its text) summed per (path, kind).
std::vector<ResidentEntry> parse_smaps(std::string_view text);

// resident.txt: "sample MONO_NS REASON", then "KIND RSS_KB PSS_KB PATH" per
// entry. Appending one sample, and reading them all (a line cut short by a
// crash ends the list).
std::string format_resident_sample(const ResidentSample& s);
std::vector<ResidentSample> parse_resident_samples(std::string_view text);

// /proc/PID/smaps of a live process, parsed; an error when it cannot be read
// (the process is gone).
Result<std::vector<ResidentEntry>> read_smaps(int pid);

// Every sample of a raw process directory, in time order: resident.txt's
// and the runtime's copies (smaps.<mono_ns>.<reason>).
std::vector<ResidentSample> read_process_samples(const std::string& dir);

// Appends a sample of `pid` taken now to DIR/resident.txt; false when the
// process is gone.
bool append_resident_sample(const std::string& dir, int pid, ResidentReason reason, uint64_t mono_ns);

}  // namespace callscope::format
