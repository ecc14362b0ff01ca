// `callscope query [options] TRACE [ARG...]`: D scripts answered over a
// recorded trace (docs/query.md). Options follow dtrace(1)'s; the work is in
// query/session.h.
#include <cstdio>

#include "cli/command.h"
#include "query/session.h"
#include "views/format_util.h"

namespace callscope::cli {
namespace {

std::string check_format(const std::string& s) {
  if (s == "text" || s == "json") return "";
  return "'" + s + "' is not an output format of query: give text or json";
}

}  // namespace

Command query_command() {
  return {"query", "Answer D (DTrace) scripts over a recorded trace: probes, predicates, aggregations",
          [](CLI::App& app) -> Runner {
            struct Opts {
              query::QueryRequest req;
              std::vector<std::string> n, P, m, f, x;
              std::vector<std::string> positionals;
              bool quiet = false;
              std::string format = "text";
            };
            auto o = std::make_shared<Opts>();
            // -n, -P, -m, -f keep their order (dtrace compiles them in order).
            auto describe = [o](char flag) {
              return [o, flag](const std::vector<std::string>& values) {
                o->req.descriptions.emplace_back(flag, values.back());
              };
            };
            app.add_option_function<std::vector<std::string>>("-n", describe('n'),
                                                              "Probe description (name read from the right) and "
                                                              "its optional clause: 'pid$target:a.out::entry { ... }'")
                ->type_name("DESCR")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option_function<std::vector<std::string>>("-P", describe('P'), "Probes of this provider (and clause)")
                ->type_name("PROVIDER")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option_function<std::vector<std::string>>("-m", describe('m'),
                                                              "Probes of this module ([provider:]module)")
                ->type_name("MODULE")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option_function<std::vector<std::string>>("-f", describe('f'),
                                                              "Probes of this function ([[provider:]module:]function)")
                ->type_name("FUNCTION")
                ->allow_extra_args(false)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            app.add_option("-s", o->req.script_file, "The D script to run")->type_name("FILE");
            app.add_flag("-l", o->req.list, "List the probes that match (all of them without -n/-P/-m/-f/-s)");
            app.add_flag("-q", o->quiet, "Quiet: only what the script prints (-x quiet)");
            app.add_flag("-Z", o->req.allow_zero, "Allow probe descriptions that match no probe");
            app.add_option("-x", o->x, "Set a D option: -x name=value (aggsortkey, quiet, ...), repeatable")
                ->type_name("OPT[=VAL]")
                ->allow_extra_args(false);
            app.add_option("--format", o->format, "Output: text, or json (one document: see docs/query.md)")
                ->check(check_format);
            app.add_option("trace", o->positionals,
                           "The trace file, then the script's macro arguments $1 ... $9");
            app.footer(
                "Over a recorded trace: clock probes (tick-1s, profile-997) fire on the trace's\n"
                "time, and $target is the pid of the program 'callscope record' started.\n"
                "Probes: dtrace:::BEGIN/END/ERROR, proc:::start/exit/..., pid<PID>:<module>:\n"
                "<function>:entry/return for every function symbol, profile:::tick-N/profile-N.\n"
                "Live tracing (-c, -p) is not there yet. See docs/query.md.");
            return [o]() -> Result<int> {
              auto& req = o->req;
              if (!o->positionals.empty()) {
                req.trace = o->positionals.front();
                req.macro_args.assign(o->positionals.begin() + 1, o->positionals.end());
              }
              if (req.macro_args.size() > 9)
                return Error("at most 9 macro arguments ($1 ... $9) follow the trace; " +
                             std::to_string(req.macro_args.size()) + " were given");
              for (const std::string& opt : o->x) {
                const size_t eq = opt.find('=');
                req.options[opt.substr(0, eq)] = eq == std::string::npos ? "" : opt.substr(eq + 1);
              }
              if (o->quiet) req.options["quiet"] = "";
              req.json = o->format == "json";
              req.refuse = [](const format::TraceReader& t) { return views::no_events_in_profile(t); };
              req.warnings = [](const format::TraceReader& t) {
                std::vector<std::string> w;
                if (std::string loss = views::loss_warning(t); !loss.empty()) w.push_back(std::move(loss));
                return w;
              };
              return query::run_query(req, stdout, stderr);
            };
          }};
}

}  // namespace callscope::cli
