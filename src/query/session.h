// One `callscope query` over a recorded trace, from the command line's
// request to the output: probe descriptions from -n/-P/-m/-f turned into a
// program, the script compiled (engine.h), its probes enabled and fired
// (driver.h), and what the program prints written out as it comes (text)
// or gathered into one JSON document (--format json, docs/query.md).
// The CLI (src/cli/cmd_query.cpp) parses options and prints errors.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace callscope::format {
class TraceReader;
}

namespace callscope::query {

struct QueryRequest {
  // -n/-P/-m/-f in the order given: the flag ('n', 'P', 'm', 'f') and its
  // text (a description, optionally followed by a predicate and actions).
  std::vector<std::pair<char, std::string>> descriptions;
  std::string script_file;  // -s
  std::string trace;        // "" for -l alone: the probes of no trace
  std::vector<std::string> macro_args;
  std::map<std::string, std::string> options;  // -x, and quiet from -q
  bool list = false;        // -l
  bool allow_zero = false;  // -Z
  bool json = false;        // --format json
  // What every command that reads events checks and says (views' helpers,
  // given by the CLI): a refusal of the trace ("" if none), and warnings
  // after the run (losses).
  std::function<std::string(const format::TraceReader&)> refuse;
  std::function<std::vector<std::string>(const format::TraceReader&)> warnings;
};

// A -P/-m/-f/-n argument as a clause of D: the description completed to
// four fields as the flag means it ("-P pid1" is "pid1:::", "-f main" is
// "::main:"), then what follows it; a description alone gets an empty
// clause ("{}": dtrace's default action).
std::string description_clause(char flag, const std::string& text);

// Runs the request. Returns the exit status (exit(n)'s, 1 for a damaged
// trace) or the error to print as "callscope query: ...". Warnings go to
// `err` as "callscope query: warning: ...".
Result<int> run_query(const QueryRequest& request, std::FILE* out, std::FILE* err);

}  // namespace callscope::query
