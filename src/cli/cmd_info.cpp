// `callscope info TRACE`: the program, its processes, threads and modules,
// how it ended, and any damage found in the file.
#include <cstdio>

#include "analysis/balance.h"
#include "cli/command.h"
#include "format/trace_reader.h"
#include "views/format_util.h"
#include "views/info_view.h"

namespace callscope::cli {

Command info_command() {
  return {"info", "Show what a trace holds: program, processes, threads, modules, how it ended; check it for damage",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string trace;
              std::string format = "text";
            };
            auto o = std::make_shared<Opts>();
            app.add_option("trace", o->trace, "Trace file")->required();
            app.add_option("--format", o->format, "Output format: text or json")
                ->check(CLI::IsMember({"text", "json"}))
                ->default_str("text");
            return [o]() -> Result<int> {
              // Damage that the other commands refuse is listed here, with
              // everything that can still be read.
              auto trace = format::TraceReader::open(o->trace, format::TraceReader::Damage::kList);
              if (!trace) return trace.error();
              (*trace)->verify_payloads();
              // Every event is read to check each thread's balance (stray
              // exits, frames never closed); damage found adds a problem.
              std::vector<analysis::StreamBalance> balance;
              for (uint32_t i = 0; i < (*trace)->threads().size(); ++i) {
                auto b = analysis::stream_balance(**trace, i);
                balance.push_back(b ? *b : analysis::StreamBalance{});
              }
              // The kernel's context switches, where the trace has them.
              auto states = analysis::thread_states(**trace);
              if (!states) return states.error();
              if (o->format == "json")
                std::printf("%s\n", views::json_text(views::info_json(**trace, balance, *states)).c_str());
              else
                views::print_info_text(**trace, balance, stdout, *states);
              std::fflush(stdout);
              if (const std::string w = views::loss_warning(**trace); !w.empty())
                print_warning("info", w);
              // A damaged trace is described as far as it can be read, and
              // the exit status says it was damaged.
              return (*trace)->problems().empty() ? 0 : 1;
            };
          }};
}

}  // namespace callscope::cli
