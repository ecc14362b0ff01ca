// `callscope html`: one self-contained HTML page (styles, scripts and data
// inline; nothing fetched when it is opened) with a trace's summary, the
// flat profile as a sortable, filterable table, the call trees (per thread
// and merged), callers and callees, the flame graph, a timeline per thread,
// the measured stack, the snapshots of a profile-mode trace and memory.
//
// The page stays under 10 MB whatever the trace's size: tables and trees
// keep their heaviest rows (and say how many were left out), and the
// timeline holds two levels of detail -- a raster per thread and depth (the
// function running at the middle of each of a bounded number of time
// buckets, and how busy the bucket was) plus every call among the longest
// ones, up to a bound -- never every event.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/report_model.h"
#include "analysis/stack_depth.h"
#include "common/result.h"
#include "export/timeline.h"
#include "format/trace_reader.h"

namespace callscope::exporter {

struct HtmlLimits {
  uint32_t tree_nodes = 30000;     // per tree (threads, merged)
  uint32_t flame_frames = 6000;
  uint32_t detail_calls = 60000;   // timeline: the longest calls, drawn one by one
  uint32_t raster_cells = 300000;  // timeline: buckets x depths x threads
  uint32_t max_depth = 64;         // timeline lanes per thread
  uint32_t timeline_threads = 256; // threads with a timeline (the first ones chosen)
  uint32_t table_rows = 20000;     // flat profile, callers/callees edges, rows per snapshot (shared)
};

struct HtmlInput {
  format::TraceReader& trace;
  const analysis::Profile& profile;     // of the threads, window or snapshot shown
  std::vector<uint32_t> threads;
  FunctionIds& functions;               // for the timeline (recordings only)
  TimelineOptions timeline;             // its window and -F/-m filter
  // -F/-m for the trees (by index into the profile's functions); null: all.
  std::function<bool(uint64_t)> wanted;
  std::string title;
  std::string filters;                  // what was chosen, as said on the page ("" : everything)
  nlohmann::json info;                  // `callscope info --format json`
  std::optional<analysis::StackDepths> stack;  // measured stack use, when recorded
  const analysis::Resolver* resolve = nullptr; // for the stack's function addresses
  // Profile mode: every snapshot, as flat profiles (name, module, calls,
  // total ns, self ns); labels alike.
  std::vector<std::string> snapshot_labels;
  std::vector<nlohmann::json> snapshot_flats;
  nlohmann::json memory;                // `callscope memory --format json`, or null
  nlohmann::json waits;                 // views::biggest_waits (the kernel's context switches), or null
  HtmlLimits limits;
};

struct HtmlCounts {
  uint64_t bytes = 0;
  uint64_t detail_calls = 0, calls = 0;  // timeline: drawn one by one, of all
  uint64_t tree_nodes_left_out = 0;
};

Result<HtmlCounts> write_html(HtmlInput& in, FILE* out);

}  // namespace callscope::exporter
