// `callscope finish RAWDIR`: turn a raw session directory into a trace, for
// a program that ran without `record` (the runtime linked in, or preloaded by
// hand) or a recording whose recorder was killed.
//
// A session still being written (its program, or the recorder streaming it,
// has its files open) is refused without --force: the trace would miss
// everything recorded from then on, and removing the session would take it
// from under the program. With --force the trace holds what is there now,
// and the session is kept.
#include <limits.h>
#include <stdlib.h>

#include <cstdio>

#include "cli/command.h"
#include "common/output_claim.h"
#include "format/finalize.h"
#include "format/raw_session.h"
#include "recorder/record_support.h"
#include "recorder/untraced_processes.h"

namespace callscope::cli {
using recorder::SessionWriter;
using recorder::print_summary;
using recorder::remove_tree;
using recorder::say_untraced_processes;
using recorder::session_writers;

namespace {

// Whether `out` is the empty file a `record` of this session claimed for
// its output before it was killed: its unfinished trace is "<out>.tmp.<pid>".
bool is_dead_recorders_output(const format::RawSession& s, const std::string& out) {
  const std::string& tmp = s.stream_path;
  const auto dot = tmp.rfind(".tmp.");
  if (!s.stream || dot == std::string::npos) return false;
  char a[PATH_MAX], b[PATH_MAX];
  return ::realpath(tmp.substr(0, dot).c_str(), a) && ::realpath(out.c_str(), b) && std::string(a) == b;
}

std::string describe(const std::vector<SessionWriter>& writers) {
  std::string text;
  for (const SessionWriter& w : writers) {
    if (!text.empty()) text += ", ";
    text += std::to_string(w.pid) + (w.name.empty() ? "" : " (" + w.name + ")");
    if (!w.certain) text += " (not yours: it may be the program or another process with its pid)";
  }
  return (writers.size() == 1 ? "process " : "processes ") + text;
}

}  // namespace

Command finish_command() {
  return {"finish", "Make a trace from a raw session directory left by the runtime",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string dir;
              std::string output;
              bool force = false;
              bool keep_raw = false;
              int level = 3;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("dir", o->dir, "Session directory (callscope-PID.raw, or FILE.raw.XXXXXX)")->required();
            app.add_option("-o,--output", o->output, "Trace file to write (default: NAME.trace in the current directory for a session NAME.raw)");
            app.add_flag("-f,--force", o->force,
                         "Overwrite the output file if it exists; make a trace of a session still being written "
                         "(of what it holds now; the session is then kept)");
            app.add_flag("--keep-raw", o->keep_raw, "Keep the session directory");
            app.add_option("--level", o->level, "zstd compression level (1-19)")->check(CLI::Range(1, 19));
            app.footer(
                "A session whose program (or recorder) is still running is refused: wait for it to end.\n"
                "Missing or damaged parts of the session are reported, and marked as lost in the trace.");
            return [o]() -> Result<int> {
              std::string dir = o->dir;
              while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
              std::string out = o->output;
              if (out.empty()) {  // callscope-1234.raw -> callscope-1234.trace
                out = dir.substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
                if (out.size() > 4 && out.compare(out.size() - 4, 4, ".raw") == 0) out.erase(out.size() - 4);
                out += ".trace";
              }
              CALLSCOPE_TRY(format::RawSession session, format::read_raw_session(dir));
              const std::vector<SessionWriter> writers = session_writers(session);
              if (!writers.empty() && !o->force)
                return Error("'" + dir + "' is still being written: " + describe(writers) +
                             " has it open. A trace made now would miss everything recorded from now on, and "
                             "finish would remove the session under it. Wait for the program to end, or use "
                             "--force to make a trace of what it holds now (the session is then kept)");
              CALLSCOPE_TRY(std::unique_ptr<OutputClaim> claim,
                            OutputClaim::take(out, o->force, is_dead_recorders_output(session, out)));
              if (!writers.empty())
                std::fprintf(stderr,
                             "callscope finish: warning: '%s' is still being written (%s): the trace holds what "
                             "it holds now; the session is kept\n",
                             dir.c_str(), describe(writers).c_str());
              format::FinalizeOptions fo;
              fo.zstd_level = o->level;
              fo.claim = claim.get();
              fo.keep_inputs = !writers.empty();
              auto sum = format::finalize_session(dir, out, fo);
              if (!sum) return sum.error();
              print_summary("finish", *sum, out);
              say_untraced_processes("finish", dir, "");
              if (!o->keep_raw && writers.empty()) remove_tree(dir);
              return 0;
            };
          }};
}

}  // namespace callscope::cli
