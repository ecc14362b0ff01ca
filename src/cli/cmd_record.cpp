// `callscope record`: run a program with the runtime preloaded, wait for it
// and its descendants, and turn the raw session into a trace file.
//
// The program keeps its stdin, stdout and stderr; Ctrl-C and Ctrl-\ reach it
// (not us) through the terminal; SIGTERM and SIGHUP sent to us are passed on.
// Once it has ended, a signal while we write the trace finishes the trace
// (a second one stops us, saying how to finish it: WritingSignals). We exit
// as it did: with its exit code, or by the same signal.
//
// The output path is claimed for the whole run (common/output_claim.h): a
// file created there meanwhile is never replaced, and a second record of
// the same output is refused at its start.
//
// The settings of the runtime (mode, filters, ...) come from flags, CALLSCOPE_*
// variables and a TOML file (common/config.h); the program gets them resolved
// and normalized as CALLSCOPE_* variables.
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/record_flags.h"
#include "common/config.h"
#include "recorder/record_support.h"
#include "recorder/recording.h"
#include "views/replay_view.h"

namespace callscope::cli {
using recorder::RecordOptions;
using recorder::Recording;

namespace {

Result<int> run_record(const RecordOptions& o) {
  CALLSCOPE_TRY(std::unique_ptr<Recording> rec, Recording::start(o, "record"));
  while (rec->reap(true)) {
  }
  if (const int failed = rec->finish(false); failed) return failed;
  return rec->exit_like_program();
}

}  // namespace

Command record_command() {
  return {"record", "Run a program compiled with -finstrument-functions, -pg or -fpatchable-function-entry (or any, with "
          "--libcalls); record every call, or keep call trees (--mode=profile)",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<RecordOptions>();
            // -o,--output and the runtime's settings, with --config FILE.
            auto settings = std::make_shared<config::Flags>(app, config::record_keys());
            add_output_flags(app, *o);
            auto* memory = app.add_flag("--memory", o->memory,
                         "Record every allocation and free too (malloc, operator new, mmap, ... and their frees), "
                         "each where it happened among the calls, and each process's resident set by module; "
                         "'callscope memory' shows where the memory went");
            auto rss_interval = std::make_shared<std::string>("100ms");
            app.add_option("--rss-interval", *rss_interval,
                           "With --memory: sample each process's resident set (/proc/PID/smaps) this often, "
                           "besides at its start, every dlopen and its exit (0: only those)")
                ->type_name("DURATION")
                ->check(duration_check())
                ->needs(memory);
            app.add_option("--unwind", o->unwind,
                           "With --memory: where an allocation's call path comes from. auto: from the hooks "
                           "of -finstrument-functions, or, for a program without them, from unwinding the "
                           "stack at each allocation (dwarf); dwarf: unwind by the .eh_frame's rules (right "
                           "for any code; 60-100 ns an allocation); fp: walk the frame pointers (faster, but "
                           "right only where every function keeps them: -fno-omit-frame-pointer); off: hooks "
                           "only. Unwound, the trace's frames say where memory was allocated, not how often "
                           "functions were called or for how long")
                ->type_name("MODE")
                ->check(CLI::IsMember({"auto", "dwarf", "fp", "off"}))
                ->default_str("auto")
                ->needs(memory);
            add_kernel_event_flags(app, *o);
            add_stream_flags(app, *o, "while the program runs");
            // Everything from PROGRAM on belongs to the program, options too.
            app.prefix_command();
            app.footer(
                "The program's stdin, stdout, stderr, exit status and signals pass through.\n"
                "The runtime is preloaded into every descendant; --follow says which are\n"
                "traced: hooked (the default) traces the program and each process with\n"
                "something to record (hooks, patchable entries, --libcalls, --memory), the\n"
                "others (a build's compilers, the shells between) cost ~0.05 ms and are only\n"
                "counted; all traces every one; none the program only (through its execs).\n"
                "record waits for every descendant to end. The runtime library is found\n"
                "next to callscope (../lib/libcallscope-rt.so) or at $CALLSCOPE_RUNTIME.\n"
                "The output is claimed at the start (an empty file, locked): a file written\n"
                "there during the run is never replaced, and a second record of the same\n"
                "output is refused. Once the program has ended, a signal finishes the trace;\n"
                "a second one stops record, which says how to finish it (callscope finish).\n"
                "Usage: callscope record [OPTIONS] [--] PROGRAM [ARGS...]\n"
                "Entries come from -finstrument-functions, -pg (mcount), -pg -mfentry (__fentry__),\n"
                "-fpatchable-function-entry=5 (nops made calls while tracing is on) and, with\n"
                "--libcalls/--patch-imports/--patch-callers, calls into shared libraries; record\n"
                "names the sources it found, and the modules whose calls through pointers kept\n"
                "in data (tables of read, write, ...) the library-call hooks cannot see.\n"
                "Example: callscope record -o app.trace -- ./app arg1 arg2\n"
                "         callscope record --mode profile --exclude 'std::*' -- ./app\n"
                "         callscope record --libcalls -- ./app    (no recompiling)\n" +
                config::Flags::help_footer());
            return [o, settings, &app, rss_interval]() -> Result<int> {
              o->rss_interval_ns = *views::parse_duration_ns(*rss_interval);  // checked above
              // CLI11 hands the arguments after PROGRAM to the parent app.
              o->command = app.remaining();
              if (o->command.empty() && app.get_parent()) o->command = app.get_parent()->remaining();
              if (!o->command.empty() && o->command.front() == "--") {
                o->command.erase(o->command.begin());
              } else if (!o->command.empty() && o->command.front().size() > 1 && o->command.front()[0] == '-') {
                // prefix_command() takes an unknown option for PROGRAM.
                std::fprintf(stderr,
                             "callscope record: unknown option '%s'\nRun 'callscope record --help' for usage "
                             "(put -- before a program whose name starts with '-').\n",
                             o->command.front().c_str());
                return 2;
              }
              CALLSCOPE_CHECK(resolve_record_settings(*settings, "record", *o));
              return run_record(*o);
            };
          }};
}

}  // namespace callscope::cli
