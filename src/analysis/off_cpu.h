// Why a thread was off its CPU: each stretch from a switch-out to the next
// switch-in (trace 1.9, kSysEvents) with what the kernel said of it --
// still runnable (preempted: it waited for a CPU) or blocked, and then, where
// the trace has them (1.10: record's sched tracepoints, --events syscalls),
// the state it slept in (S, D), the system call it was in, and who woke it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "format/sys_events.h"

namespace callscope::analysis {

struct OffCpu {
  uint64_t start = 0, end = 0;  // ticks; end: the next switch-in, or the thread's end
  bool runnable = false;        // preempted (still runnable), else blocked
  char state = 0;               // blocked: 'S', 'D', ... from sched_switch; 0: not known
  int64_t syscall = -1;         // the system call it was in (--events syscalls); -1: none, or not known
  bool fault = false;  // blocked (D) in a major page fault, outside any system call (--events syscalls,faults)
  bool disk = false;  // blocked (D) while a block request the thread began was in flight (--events io)
  uint64_t disk_dev = 0;        // that request's device (the kernel's dev_t)
  bool woken = false;           // a wakeup was seen before its switch-in
  uint32_t waker_tid = 0, waker_pid = 0;  // 0: an interrupt, or not known
  uint64_t woken_at = 0;                  // the wakeup's tick (woken)
};

// A thread's stretches off its CPU, in time order, from its events (in time
// order); `to_tick` puts CLOCK_MONOTONIC ns on the trace's clock; one still
// open at the end ends at `end_tick`.
std::vector<OffCpu> off_cpu_stretches(const std::vector<format::SysEvent>& events, uint64_t end_tick,
                                      const std::function<uint64_t(uint64_t)>& to_tick);

// The reason as a frame's label: "[runnable]"; a system call's name
// ("[futex]", "[fsync D]" when it slept uninterruptibly); "[major fault]"
// (the thread waited uninterruptibly outside any system call, and its next
// page fault was major: it waited for the page to be read; known only
// where the trace has the system calls); without those the state:
// "[sleeping]", "[uninterruptible]", or "[blocked]" when the trace has no
// states. A D wait while the thread's own block request was in flight
// names the disk, by `device` (a dev_t's name; none: "MAJOR:MINOR"):
// "[fsync: disk vda]", or "[disk vda]" outside a system call.
std::string off_cpu_reason(const OffCpu& o, const std::function<std::string(uint64_t)>& device = {});
// A block request's kind and device as a leaf's label: "[write vda]",
// "[read vda]", "[flush vda]", "[discard vda]".
std::string io_reason(uint64_t kind, const std::string& device);
// A block request's kind alone: "write", "read", "flush", "discard"; with
// " sync", " meta", " fua" after it as the kernel said.
std::string io_kind_name(uint64_t kind);
// A page fault's kind as a leaf's label, from its flags (format
// kFaultMajor, kFaultInKernel): "[minor fault]", "[major fault]", and
// "[minor fault in the kernel]" for one taken in a system call.
std::string fault_reason(uint64_t flags);

// A system call's name on this machine's architecture ("futex"), or
// "syscall N" when not known.
std::string syscall_name(int64_t nr);
// The number of a name, or -1.
int64_t syscall_number(const std::string& name);
// Every system call this machine's headers name, by number.
std::vector<std::pair<int64_t, std::string>> syscall_table();

// The kernel's sched_switch prev_state mask as a letter: 'R' runnable, 'S',
// 'D', 'T', 't', 'X', 'Z', 'P', 'I'.
char sleep_state_letter(uint64_t mask);

}  // namespace callscope::analysis
