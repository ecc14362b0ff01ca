// What `record` and `finish` share: checking paths, finding the program and
// the runtime, the recorder's own metadata file, and the closing summary.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/output_claim.h"
#include "common/result.h"
#include "format/finalize.h"
#include "format/raw_session.h"
#include "format/trace_format.h"
#include "recorder/ctl_socket.h"  // remove_stale_socket

namespace callscope::recorder {

// PROGRAM as execvp would find it, or a clear error.
Result<std::string> find_program(const std::string& name);
// libcallscope-rt.so: $CALLSCOPE_RUNTIME, else ../lib/ or ./ next to callscope.
Result<std::string> find_runtime();

enum class Instrumentation { kUnknown, kNone, kCygProfile };
// Whether an ELF file has entries the runtime records: it references
// __cyg_profile_func_enter, mcount or __fentry__, or lists patchable entries
// (kUnknown when it is not ELF, e.g. a script).
Instrumentation instrumentation_of(const std::string& path);
// Which of those an ELF file has, for people: "-finstrument-functions hooks,
// patchable entries (12)", "" when none (or not ELF).
std::string instrumentation_sources(const std::string& path);

// Where raw sessions go by default: /dev/shm when usable, else next to the output.
std::string default_raw_dir(const std::string& output);
// A fresh session directory: <raw_dir>/callscope-<output name>.XXXXXX
Result<std::string> make_session_dir(const std::string& raw_dir, const std::string& output);
// LD_PRELOAD's value for `libs`, in that order. The dynamic linker splits
// the variable at spaces and colons, with no way to quote one: a library
// whose path holds either (a build in "/home/u/my projects") is preloaded
// through a link of a plain name, in `session` when its path is plain too,
// else in a directory made for it in /tmp, whose path goes to `made_dir`
// (the caller removes it once the program has ended).
Result<std::string> preload_value(const std::vector<std::string>& libs, const std::string& session,
                                  std::string& made_dir);
void remove_tree(const std::string& dir);


// A process that still writes into a raw session: one of its processes (or
// the recorder streaming it) with a file of the session open. `certain` is
// false for a process of the session that is not ours (its files cannot be
// seen): it may be the program, or a process that reused its pid.
struct SessionWriter {
  pid_t pid = 0;
  std::string name;  // /proc/PID/comm
  bool certain = true;
};
std::vector<SessionWriter> session_writers(const format::RawSession& session);

// The recorder's records in <session>/recorder.meta.
class SessionLog {
 public:
  explicit SessionLog(std::string session) : session_(std::move(session)) {}
  ~SessionLog() { close(); }
  Status open();
  void write_recorder_info(const std::vector<std::string>& argv);
  void write_calibration();
  void write_child_status(const format::RawChildStatus& status);
  int fd() const { return fd_; }
  void close();

 private:
  void write(format::RawMetaType type, const void* body, size_t size, const std::string& extra = {});
  std::string session_;
  int fd_ = -1;
};

// While `record` writes the trace, once the program has ended: SIGINT,
// SIGQUIT, SIGTERM and SIGHUP have no program to go to any more, and must
// not kill record half-way. The first one gets a note and the trace is
// finished; a second one stops record at once (it then dies by that signal),
// after saying how to make the trace from what is left -- nothing is lost:
// the raw session and the unfinished trace stay -- and removing the empty
// file that claimed the output. One at a time; the old dispositions come
// back on destruction.
class WritingSignals {
 public:
  WritingSignals(const std::string& session, const std::string& output, const std::string& unfinished,
                 const OutputClaim* claim, const char* who = "record", bool program_ended = true);
  ~WritingSignals();
  WritingSignals(const WritingSignals&) = delete;
  WritingSignals& operator=(const WritingSignals&) = delete;
  // How many of those signals came.
  int received() const;
};

void print_summary(const char* command, const format::FinalizeSummary& sum, const std::string& output);

}  // namespace callscope::recorder
