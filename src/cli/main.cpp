// callscope's entry point: the explicit table of commands, argument parsing,
// and the one place where an error value becomes a message and an exit code.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/command.h"

namespace {

constexpr int kUsageError = 2;
constexpr int kFailure = 1;

}  // namespace

int main(int argc, char** argv) {
  using namespace callscope::cli;
  const std::vector<Command> commands = {
      record_command(), attach_command(), detach_command(), finish_command(), info_command(), dump_command(), memory_command(), stack_command(), report_command(),
      replay_command(), export_command(), flame_command(), html_command(), ctl_command(), config_command(), query_command(),
  };

  CLI::App app{"callscope: a function-level tracer and profiler for C and C++ programs",
               "callscope"};
  app.set_version_flag("--version", std::string("callscope ") + CALLSCOPE_VERSION);
  app.require_subcommand(1);
  // `record` stops parsing at PROGRAM (prefix_command); CLI11 hands what
  // follows up to us, so extras are allowed here and refused below for the
  // commands that take none.
  app.allow_extras();
  app.footer(
      "Quick start:\n"
      "  gcc -g -finstrument-functions app.c -o app\n"
      "  callscope record -o app.trace -- ./app\n"
      "  callscope report app.trace              (or: html app.trace -> app.html, every view)\n"
      "Traces, binaries and config files are read from regular files only (a FIFO or a\n"
      "device is refused at once). Text output shows control characters in names from\n"
      "a trace or a binary as escapes (\\x1b); CSV and JSON keep them in their own quoting.\n"
      "Run 'callscope COMMAND --help' for a command's options.");

  std::map<const CLI::App*, std::pair<const Command*, Runner>> runners;
  for (const Command& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    runners[sub] = {&c, c.setup(*sub)};
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    if (app.get_subcommands().empty()) {
      // No command, or an unknown one: say which, and list the commands.
      if (!app.remaining().empty())
        std::fprintf(stderr, "callscope: unknown command '%s'\n\n", app.remaining().front().c_str());
      std::fprintf(stderr, "%s", app.help().c_str());
      return kUsageError;
    }
    std::string where = "callscope";
    for (const CLI::App* sub : app.get_subcommands()) where += std::string(" ") + sub->get_name();
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", where.c_str(), e.what(), where.c_str());
    return kUsageError;
  } catch (const CLI::ParseError& e) {
    std::string where = "callscope";
    for (const CLI::App* sub : app.get_subcommands()) where += std::string(" ") + sub->get_name();
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", where.c_str(), e.what(),
                 where.c_str());
    return kUsageError;
  }

  for (const CLI::App* sub : app.get_subcommands()) {
    auto& [cmd, run] = runners.at(sub);
    if (!sub->get_prefix_command() && !app.remaining().empty()) {
      std::string extra;
      for (const std::string& a : app.remaining()) extra += " " + a;
      std::fprintf(stderr, "callscope %s: unexpected arguments:%s\nRun 'callscope %s --help' for usage.\n", cmd->name,
                   extra.c_str(), cmd->name);
      return kUsageError;
    }
    auto result = run();
    if (!result) {
      // Messages may quote what was read (a section name, a line of an
      // --edges file, a thread name): never raw on a terminal.
      std::fprintf(stderr, "callscope %s: %s\n", cmd->name, callscope::terminal_safe_lines(result.error().message()).c_str());
      return kFailure;
    }
    return result.value();
  }
  return kUsageError;
}
