// Part of the recorder: a tracepoint read through a tracefs instance of its
// own (instances/callscope-PID), for events perf cannot give. The kernel
// delivers no perf sample from a CPU that sits idle -- a disk's completion
// interrupt there is lost to a perf event, even one watching the whole
// CPU -- while ftrace's buffers take every one. Its trace_pipe is read
// without blocking, line by line (the event's print format), on the
// instance's CLOCK_MONOTONIC ("mono": microseconds); the instance goes
// when this does, and one left by a recorder that died is removed by the
// next.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"

namespace callscope::recorder {

class TraceInstance {
 public:
  // Enables SYSTEM:NAME (e.g. "block", "block_rq_complete") in a new
  // instance; an error says what is missing (tracefs, root).
  static Result<std::unique_ptr<TraceInstance>> open(const std::string& system, const std::string& name);
  ~TraceInstance();
  TraceInstance(const TraceInstance&) = delete;
  TraceInstance& operator=(const TraceInstance&) = delete;

  // Every line waiting: f(time in CLOCK_MONOTONIC ns, the event's text
  // after "NAME: "). Returns how many.
  size_t drain(const std::function<void(uint64_t, const std::string&)>& f);

 private:
  TraceInstance() = default;
  std::string dir_, event_;  // the instance; the event's place in it
  std::string marker_;       // ": NAME: ", after a line's timestamp
  int pipe_ = -1;
  std::string partial_;  // a line not yet ended
};

// A block_rq_complete line's fields ("254,0 WS () 365183976 + 8 be,0,4 [0]"):
// false when it is not one.
struct BlockCompletion {
  uint32_t dev = 0;  // MAJOR << 20 | MINOR, as the kernel's dev_t
  uint64_t sector = 0;
  int32_t error = 0;
};
bool parse_block_completion(const std::string& text, BlockCompletion& out);

}  // namespace callscope::recorder
