// What the commands that draw or export a trace share with `report`: the
// trace and its symbolizer, the threads chosen (-t), the time window
// (--from/--to), the functions wanted (-F/-m: only the paths through them),
// the snapshot of a profile-mode trace (--dump), and the file written (-o).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/memory.h"
#include "analysis/report_model.h"
#include "common/result.h"
#include "format/trace_reader.h"
#include "symbolize/symbolizer.h"

namespace callscope::cli {

struct ViewFilters {
  std::vector<std::string> function_globs, module_globs, threads;
  std::string from, to;  // durations since the trace start ("1.5ms")
  uint32_t dump = 0;     // profile mode: snapshot K (1-based); 0: the final states
  bool no_demangle = false;
};

// Declares -F, -m, -t, --from, --to, --dump and --no-demangle on `app`.
void add_view_filters(CLI::App& app, ViewFilters& f);

// The resolver of `report`: names (demangled unless asked not to), modules,
// source file and line.
analysis::Resolver symbol_resolver(symbolize::Symbolizer& sym);

// Snapshot K (1-based) of a profile-mode trace, or the final states; an
// error for K on a recording.
Result<std::vector<uint32_t>> pick_dumps(const format::TraceReader& t, uint32_t k);

struct ViewInput {
  std::unique_ptr<format::TraceReader> trace;
  std::unique_ptr<symbolize::Symbolizer> sym;
  analysis::Resolver resolve;
  std::vector<uint32_t> threads;
  analysis::TickWindow window;
  // -F/-m: whether a function is wanted; null when neither was given.
  std::function<bool(const analysis::FunctionInfo&)> wanted;
};

// -F/-m as a test on the indexes of `p.functions` (what the call trees are
// keyed by); null when neither was given.
std::function<bool(uint64_t)> wanted_functions(const ViewInput& in, const analysis::Profile& p);

// Opens `path` and reads the filters; refuses --from/--to on a profile-mode
// trace (snapshots have no time) and --dump on a recording.
Result<ViewInput> open_view(const std::string& path, const ViewFilters& f);

// The call trees the filters select: of the window of a recording, or of
// the snapshot of a profile-mode trace. An error when -F/-m match no
// function.
Result<analysis::Profile> load_view_profile(ViewInput& in, const ViewFilters& f);
// --wait: where the threads waited, by call path and reason
// (analysis::build_wait_profile); an error that says why for a trace
// without the kernel's context switches, and for a window.
Result<analysis::Profile> load_wait_profile(ViewInput& in, const ViewFilters& f);
// Why a trace has no --wait view (profile mode, no context switches).
// The kernel's events under call paths (--wait, --samples, --faults, --io)
// need calls in time: a profile-mode trace is refused, saying so.
Status kernel_view_possible(const format::TraceReader& t, const std::string& flag);
Status wait_view_possible(const format::TraceReader& t);
// --samples: where the threads ran, from their CPU samples
// (analysis::build_sample_profile); an error that says why for a trace
// without them, and for a window.
Result<analysis::Profile> load_sample_profile(ViewInput& in, const ViewFilters& f);
// An error that says what to record (`record_with`) when `p`, a profile of
// the kernel's events (`what`: "CPU samples"), holds none of its threads'.
Status events_present(const analysis::Profile& p, const std::string& what, const std::string& record_with);

// One side of a --diff A B: "K" is snapshot K of `trace` (a profile-mode
// trace), anything else another trace (its final state, or its whole
// recording). The filters apply as to a single trace; `f.dump` is ignored.
struct DiffSide {
  ViewInput in;
  analysis::Profile profile;
  std::string label;  // "app.trace snapshot 2 (at 1.500000 s)", "new.trace"
};
Result<DiffSide> open_diff_side(const std::string& spec, const std::string& trace, ViewFilters f);

// The allocations of a recording made with record --memory; nothing for a
// trace without memory events (read only when its threads hold more events
// than entries and exits).
Result<std::optional<analysis::MemoryModel>> memory_model(format::TraceReader& t);

// The error for -F/-m globs that matched nothing (as report says it).
Error nothing_wanted(const ViewFilters& f);

// The symbolizer's warnings, the loss warning and damage, as `report`
// prints them; returns the exit code (1 when the trace is damaged).
int finish_view(const char* command, const ViewInput& in);

// A file written whole or not at all: into a temporary file beside `path`,
// renamed over it by commit(); removed if never committed. `path` "-" (or
// empty) is stdout; a device or a FIFO (-o /dev/null) is written in place. Refused: a path that holds a callscope trace (an -o
// given the input by mistake would destroy a recording).
class OutputFile {
 public:
  static Result<std::unique_ptr<OutputFile>> open(const std::string& path, bool binary);
  ~OutputFile();
  FILE* file() const { return f_; }
  Status commit();
  const std::string& path() const { return path_; }
  bool is_stdout() const { return f_ == stdout; }

 private:
  OutputFile() = default;
  std::string path_, tmp_;
  FILE* f_ = nullptr;
  bool committed_ = false;
  bool in_place_ = false;  // a device or a pipe, written directly
};

}  // namespace callscope::cli
