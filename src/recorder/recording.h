// One run of a program under the recorder, as `record` does it and as
// `query -c` does it with a tap on the events (format/live_stream.h):
// the program started with the runtime preloaded, its descendants reaped
// and logged, the trace streamed while it runs and finished once it has
// ended.
//
// Signals while it runs: SIGINT and SIGQUIT reach the program through the
// terminal, not us (ignored here, unless the caller installs its own
// handler after start()); SIGTERM and SIGHUP sent to us are passed on.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace callscope::format {
class LiveStream;
class LiveTap;
}  // namespace callscope::format

namespace callscope::recorder {

struct RecordOptions {
  std::string output;  // from the settings (-o, CALLSCOPE_OUTPUT, output)
  std::string raw_dir;
  bool force = false;
  bool keep_raw = false;
  bool drop_when_behind = false;
  bool memory = false;  // --memory: libcallscope-mem.so preloaded before the runtime
  // --events: the kernel's events of the program's threads beside its
  // calls, where the kernel allows it: context switches (with the sleep
  // states and wakers where the sched tracepoints may be read), and system
  // calls when asked.
  bool sys_events = true;
  bool sys_syscalls = false;
  bool sys_faults = false;
  bool sys_io = false;
  uint32_t sample_hz = 0;  // --sample HZ: CPU samples (0: none)
  // --memory: /proc/PID/smaps of each process sampled this often (0: only
  // at start, dlopen and exit, which the runtime takes).
  uint64_t rss_interval_ns = 100'000'000;
  std::string unwind = "auto";  // --unwind: auto, dwarf, fp, off (with --memory)
  int level = 1;  // zstd: the fastest, while the program runs (TraceWriter::create)
  std::vector<std::string> command;
  // The runtime's settings as it reads them: ("CALLSCOPE_MODE", "profile"), ...
  std::vector<std::pair<std::string, std::string>> runtime_env;
  // No output was asked for (query -c without -o): with a tap, no events
  // are encoded (LiveStream::set_tap's tap_only); the trace file (its header
  // alone) lives in the session directory and goes with it.
  bool scratch_output = false;
  // The tap gets the kernel's events too (format::LiveDelivery::sys): a
  // query whose script has probes of the kernel's providers.
  bool tap_kernel_events = false;
  // The session directory stays until the Recording is destroyed, not
  // only until finish() (query -c reads it after, for the last processes).
  bool keep_session_until_destroyed = false;
  // callscope attach: the running process to load the runtime into, instead
  // of a command to start (`command` is then unused).
  pid_t attach_pid = 0;
};

class Recording {
 public:
  // Starts the program, or with o.attach_pid attaches to it (its signals
  // are then its own: none is forwarded). `who` names the command in
  // messages ("record").
  // With `tap`, the events go to it too, as they come.
  static Result<std::unique_ptr<Recording>> start(const RecordOptions& o, const char* who,
                                                  format::LiveTap* tap = nullptr, double ticks_per_ns = 1.0);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  // Reaps the descendants that have ended (block: waits for one). False
  // once none is left.
  bool reap(bool block);
  // The program's pid, and its wait status once reaped.
  pid_t pid() const { return child_; }
  int main_status() const { return main_status_; }
  const std::string& session() const { return session_; }
  format::LiveStream& live() { return *live_; }
  // The pids of the session's processes not reaped yet.
  std::vector<pid_t> running() const;
  // From now on the caller's thread drains the rings, in pump(), instead
  // of the recorder's own thread (query -c: its thread would otherwise
  // take turns with the query's for a core).
  void drain_here();
  void pump();

  // Once every descendant has ended (or, for a program left running, once
  // tracing has stopped in it): the tap gets what is left, the trace is
  // written (its summary printed unless `quiet`). 0, or 1 when the trace
  // could not be written (said on stderr, with how to finish it).
  int finish(bool quiet);
  // Exits as the program did: its exit code, or its signal raised at us.
  int exit_like_program() const;
  // The kernel's events recorded beside the calls, as the trace's info
  // flags say them (format::kInfoEventGroups, kInfoNoSwitches,
  // kInfoSyscalls, ...): 0 when none could be.
  uint32_t kernel_events() const;
  // Whether the program's threads are sampled (--sample, where the kernel allowed it).
  bool samples() const;
  // Attached: how long the program's thread was held to load the runtime.
  double attach_stopped_ms() const { return attach_stopped_ms_; }

 private:
  Recording() = default;
  RecordOptions o_;
  const char* who_ = "record";
  std::string session_;
  struct State;
  std::unique_ptr<State> s_;
  std::unique_ptr<format::LiveStream> live_;
  pid_t child_ = -1;
  int main_status_ = 0;
  bool main_reaped_ = false;
  bool remove_later_ = false;
  std::string preload_dir_;  // links to the preloaded libraries, when their paths hold spaces (preload_value)
  bool drain_here_ = false;
  double attach_stopped_ms_ = 0;
  void remove_session();
  std::vector<pid_t> reaped_;
};

}  // namespace callscope::recorder
