// Flame graphs: a self-contained interactive SVG of the call paths of a
// StackTree (export/stacks.h) -- a frame per call path, as wide as its
// weight, its callees above it (below it in icicle form) -- with a script of
// our own inlined (export/web/flame.js): click to zoom, search with the
// share matched, details of the frame under the mouse, reset. Same tree,
// same options: same bytes.
//
// A differential flame graph draws the second tree's shape and colours each
// frame by how its own weight changed from the first tree: red grew, blue
// shrank, white unchanged.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/result.h"
#include "export/aggregate_exports.h"
#include "export/stacks.h"
#include "format/trace_reader.h"

namespace callscope::exporter {

struct FlameOptions {
  bool icicle = false;         // the root on top, callees below
  Weight by = Weight::kSelf;   // widths: self (so that a frame is its total time), total, calls
  std::string title;           // the heading
  std::string subtitle;        // a line under it (the program, the trace)
  uint32_t width = 1200;       // pixels
  uint32_t max_frames = 30000; // past this, the narrowest frames are left out (the page stays light)
};

struct FlameCounts {
  uint64_t frames = 0;   // drawn
  uint64_t elided = 0;   // left out: narrower than the narrowest drawn
  uint64_t bytes = 0;
};

// The trees' ticks are `trace`'s (`base`'s for the first tree of a diff).
Result<FlameCounts> write_flame(const format::TraceReader& trace, const StackTree& t, const FlameOptions& o, FILE* out);
Result<FlameCounts> write_flame_diff(const format::TraceReader& base_trace, const StackTree& base,
                                     const format::TraceReader& trace, const StackTree& t, const FlameOptions& o,
                                     FILE* out);

// Text for XML (and HTML): escaped; control characters and bytes that are
// not well-formed UTF-8 (or U+FFFE, U+FFFF) become '?', so that no name can
// make the file unreadable.
std::string xml_text(std::string_view s);

// The SVG as a string, for the HTML report (no XML prolog, script
// included once by the page).
std::string flame_svg(const format::TraceReader& trace, const StackTree& t, const FlameOptions& o,
                      bool with_script, FlameCounts* counts = nullptr);

}  // namespace callscope::exporter
