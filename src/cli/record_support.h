// What `record` and `finish` share: checking paths, finding the program and
// the runtime, the recorder's own metadata file, and the closing summary.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/ctl_socket.h"  // remove_stale_socket
#include "common/result.h"
#include "format/finalize.h"
#include "format/trace_format.h"

namespace callscope::cli {

// An output path is usable: absent (or --force), and its directory writable.
Status check_output_path(const std::string& path, bool force);
// PROGRAM as execvp would find it, or a clear error.
Result<std::string> find_program(const std::string& name);
// libcallscope-rt.so: $CALLSCOPE_RUNTIME, else ../lib/ or ./ next to callscope.
Result<std::string> find_runtime();

enum class Instrumentation { kUnknown, kNone, kCygProfile };
// Whether an ELF file references __cyg_profile_func_enter (kUnknown when it
// is not ELF, e.g. a script).
Instrumentation instrumentation_of(const std::string& path);

// Where raw sessions go by default: /dev/shm when usable, else next to the output.
std::string default_raw_dir(const std::string& output);
// A fresh session directory: <raw_dir>/callscope-<output name>.XXXXXX
Result<std::string> make_session_dir(const std::string& raw_dir, const std::string& output);
void remove_tree(const std::string& dir);


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

void print_summary(const char* command, const format::FinalizeSummary& sum, const std::string& output);

}  // namespace callscope::cli
