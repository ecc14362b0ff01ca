// Part of the recorder: the call path of a CPU sample of a program without
// hooks (record --sample HZ), unwound beside the program from what the
// kernel copied at the sample -- the thread's user registers and the top of
// its stack (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER) -- by the
// .eh_frame and .debug_frame rules of the modules the process maps
// (elfutils' libdwfl, which perf's --call-graph dwarf uses too). The
// unwinding is done here, not at report time: the trace keeps the frames'
// addresses, not 8 KiB of stack per sample.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace callscope::recorder {

class SampleUnwinder {
 public:
  // The registers asked of the kernel (perf_event_attr.sample_regs_user)
  // and how many it gives; 0 on an architecture not unwound here.
  static uint64_t regs_mask();
  static unsigned regs_count();
  // The bytes of stack the kernel copies at each sample.
  static constexpr uint32_t kStackBytes = 8192;
  static constexpr uint32_t kMaxFrames = 127;

  SampleUnwinder();
  ~SampleUnwinder();
  SampleUnwinder(const SampleUnwinder&) = delete;
  SampleUnwinder& operator=(const SampleUnwinder&) = delete;

  // The frames of thread `tid` of process `pid` above the sampled
  // instruction, innermost first, each an address inside its function: the
  // return address less one (inside the call), or, for the first frame of a
  // sample taken in the kernel (`in_kernel`), the user instruction where it
  // entered the kernel. `time_ns` the sample's (CLOCK_MONOTONIC), `regs`
  // as the kernel gave them (regs_count() of them), `stack` the copy of the
  // stack from the sampled sp on. Writes at most kMaxFrames; `cut` says the
  // outer frames are not known: the unwinding went past the copy, came to
  // code in no module, or the process's modules were not known.
  uint32_t unwind(pid_t pid, pid_t tid, uint64_t time_ns, bool in_kernel, const uint64_t* regs, const uint8_t* stack,
                  uint64_t size, uint64_t* out, bool& cut);
  // What each process maps, as the kernel tells it (PERF_RECORD_MMAP2 of
  // executable mappings, PERF_RECORD_COMM of an exec, PERF_RECORD_FORK):
  // known so, a process's modules are known even when its samples are read
  // after it has ended. A process not told of (attach: mapped before) is
  // read from /proc/PID/maps at its first sample.
  void mapped(pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff, const std::string& path);
  void exec(pid_t pid, uint64_t time_ns);
  void forked(pid_t parent, pid_t child);
  // The process ended: its modules are let go.
  void forget(pid_t pid);

  struct Process;

 private:
  Process* process(pid_t pid, uint64_t ip);
  Process& slot(pid_t pid);
  std::map<pid_t, std::unique_ptr<Process>> processes_;
  int vdso_fd_ = -2;  // a copy of the kernel's vDSO (ours: the same kernel's), -1 if none
};

}  // namespace callscope::recorder
