// The processes a recording left untraced (record --follow): the runtime of
// each one that had nothing to record, or that --follow none leaves out,
// appends a line to the session's `untraced-processes` instead of setting
// itself up (src/runtime/follow.cpp). record and finish count them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace callscope::recorder {

struct UntracedProcesses {
  uint64_t count = 0;
  // Program names with how many processes ran each, most first.
  std::vector<std::pair<std::string, uint64_t>> names;
};

// The session's file read: "PID NAME" lines, a "PID -" line taking back the
// last line of that pid (a dormant process set up after all). Empty when
// there is no file.
UntracedProcesses read_untraced_processes(const std::string& session);

// One line on stderr when there were any: "callscope WHO: 201 processes
// without hooks were not traced (true 200, seq 1); ...". `follow`: the
// setting's value ("" when not known: finish).
void say_untraced_processes(const char* who, const std::string& session, const std::string& follow);

// The --follow a recording's runtime settings hold: "hooked" when unset.
std::string follow_setting(const std::vector<std::pair<std::string, std::string>>& runtime_env);

}  // namespace callscope::recorder
