// The table of callscope commands. Each command lives in its own cmd_*.cpp and
// exposes one function returning its Command; main.cpp lists them all.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <string>

#include "common/output_format.h"
#include "common/result.h"

namespace callscope::cli {

// Runs the command after its options were parsed; returns the process exit
// code, or an Error that main prints as "callscope <name>: <message>".
using Runner = std::function<Result<int>()>;

struct Command {
  const char* name;
  const char* summary;
  // Declares the command's options on `app` (its own CLI11 subcommand) and
  // returns the runner, which reads the parsed values.
  std::function<Runner(CLI::App& app)> setup;
};

Command record_command();
Command attach_command();
Command detach_command();
Command finish_command();
Command info_command();
Command dump_command();
Command memory_command();
Command stack_command();
Command report_command();
Command replay_command();
Command ctl_command();
Command config_command();
Command query_command();
Command export_command();
Command flame_command();
Command html_command();

}  // namespace callscope::cli
