// `callscope finish RAWDIR`: turn a raw session directory into a trace, for
// a program that ran without `record` (the runtime linked in, or preloaded by
// hand) or a recording whose recorder was killed.
#include <cstdio>

#include "cli/command.h"
#include "cli/record_support.h"
#include "format/finalize.h"

namespace callscope::cli {

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
            app.add_flag("-f,--force", o->force, "Overwrite the output file if it exists");
            app.add_flag("--keep-raw", o->keep_raw, "Keep the session directory");
            app.add_option("--level", o->level, "zstd compression level (1-19)")->check(CLI::Range(1, 19));
            return [o]() -> Result<int> {
              std::string dir = o->dir;
              while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
              std::string out = o->output;
              if (out.empty()) {  // callscope-1234.raw -> callscope-1234.trace
                out = dir.substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
                if (out.size() > 4 && out.compare(out.size() - 4, 4, ".raw") == 0) out.erase(out.size() - 4);
                out += ".trace";
              }
              CALLSCOPE_CHECK(check_output_path(out, o->force));
              format::FinalizeOptions fo;
              fo.zstd_level = o->level;
              auto sum = format::finalize_session(dir, out, fo);
              if (!sum) return sum.error();
              print_summary("finish", *sum, out);
              if (!o->keep_raw) remove_tree(dir);
              return 0;
            };
          }};
}

}  // namespace callscope::cli
