// What /proc says of a process callscope traces, read from what the program
// cannot rewrite. A program may overwrite its argv and environment
// (setproctitle: nginx, PostgreSQL, redis), so /proc/PID/environ need not
// name CALLSCOPE_DIR any more; but its runtime maps the files of its session
// (each thread's ring or tree) and holds the session's directories and meta
// file open, which /proc/PID/maps and /proc/PID/fd show whatever the program
// wrote over its strings. Used by `ctl` (the programs a recorder traces),
// `query -p` (the recording a program is in) and `attach` (a process traced
// already).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace callscope::recorder {

// /proc/PID/WHAT ("" when unreadable), and its NUL-separated items.
std::string read_proc(pid_t pid, const char* what);
std::vector<std::string> nul_separated(const std::string& text);

// The raw session directory PID's runtime writes into, "" when it has none
// (not traced, or detached: a detach lets go of the session's files). When
// /proc/PID/maps cannot be read (another user's process, or one not
// dumpable), "" and `unreadable` says why.
std::string session_of(pid_t pid, std::string* unreadable = nullptr);

// How a session was made, from what it holds.
enum class SessionKind {
  kRecord,      // by `callscope record` (its recorder.meta)
  kAttach,      // by `callscope attach` (its attach.settings)
  kRuntime,     // by the runtime alone: linked in or preloaded, without record
  kNotOurs,     // another user's: we cannot look inside
};
SessionKind session_kind(const std::string& session);

// Whether PID runs `callscope record` (by its command line: the recorder's
// own, which no traced program writes over).
bool is_recorder(pid_t pid);
// The children of `recorder` that it traces: its children whose runtime
// writes into the session the recorder writes (the directory of the
// recorder.meta it holds open).
std::vector<pid_t> traced_children(pid_t recorder);

}  // namespace callscope::recorder
