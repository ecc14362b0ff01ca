// Part of the recorder: what the kernel says about the traced threads --
// context switches (out, and whether the thread was still runnable: a
// preemption; in), forks and exits -- from perf_event_open,
// one ring per CPU. The events follow one process and, inherited, every
// thread and process it makes after they are opened; each CPU's ring is
// written only by that CPU, so the kernel needs no lock and the reader
// none. Times are CLOCK_MONOTONIC nanoseconds (`use_clockid`): the trace's
// calibration pairs put them on its clock.
//
// What it needs: perf_event_open, and the right to watch that process.
// Context-switch records are side-band records, allowed at
// kernel.perf_event_paranoid 2 (mainline's default) without privilege;
// paranoid 3 (Debian's and Ubuntu's kernels) refuses everything to users
// without CAP_PERFMON. open() says which, and the fix.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "recorder/sample_unwind.h"
#include "recorder/trace_instance.h"
#include "recorder/tracefs.h"

struct perf_event_attr;

namespace callscope::recorder {

struct SysRecord {
  enum class Kind : uint8_t {
    kSwitchOut,         // the thread left the CPU, blocked (sleeping, waiting, stopped)
    kSwitchOutPreempt,  // the thread left the CPU still runnable (its time was up, or a waker came first)
    kSwitchIn,          // the thread got a CPU
    kFork,              // a thread or process began: pid, tid its own; parent_pid, parent_tid its creator's
    kExit,              // a thread or process ended
    kLost,              // the ring was full: `lost` records dropped on this CPU before this point
    kSleepState,        // sched_switch: the state the thread left the CPU in (`state`, the kernel's mask)
    kWakeup,            // sched_waking: tid was woken by parent_pid/parent_tid (pid unknown: 0)
    kSyscallEnter,      // raw_syscalls: `nr` with its six raw arguments
    kSyscallExit,       // raw_syscalls: `nr` returned `ret`
    kPageFault,         // a page fault at `addr`, taken at `ip`; `major` (it read from a file or swap), `in_kernel`
    kSample,            // a CPU sample: the thread ran `ip` (`in_kernel`: the kernel's), after `period` ns of CPU
    kIoStart,           // block:block_io_start: the thread began a request (`dev`, `sector`, `bytes`, `io_kind`)
    kIoDone,            // block:block_rq_complete, of any CPU: the request at `dev`/`sector` ended (`error`); no thread
  };
  Kind kind = Kind::kSwitchOut;
  uint32_t pid = 0, tid = 0;
  uint32_t parent_pid = 0, parent_tid = 0;  // kFork, kExit
  uint32_t cpu = 0;
  uint64_t time_ns = 0;  // CLOCK_MONOTONIC
  uint64_t lost = 0;     // kLost
  uint64_t state = 0;    // kSleepState
  int64_t nr = 0;        // kSyscallEnter, kSyscallExit
  int64_t ret = 0;       // kSyscallExit
  uint64_t args[6] = {};  // kSyscallEnter
  uint64_t addr = 0, ip = 0;  // kPageFault; ip: kSample
  uint64_t period = 0;        // kSample
  // kSample: the frames above `ip`, innermost first (SampleUnwinder::unwind;
  // valid during the callback); `frames_cut`: the outer ones are not known.
  const uint64_t* frames = nullptr;
  uint32_t n_frames = 0;
  bool frames_cut = false;
  bool major = false;         // kPageFault
  bool in_kernel = false;     // kPageFault: taken by the kernel on the thread's behalf (in a system call)
  uint32_t dev = 0;           // kIoStart, kIoDone: the kernel's dev_t (MAJOR << 20 | MINOR)
  uint32_t bytes = 0;         // kIoStart
  uint64_t sector = 0;        // kIoStart, kIoDone
  uint64_t io_kind = 0;       // kIoStart: format's kIoWrite, kIoFlush, ...
  int32_t error = 0;          // kIoDone
};

// The kind of a block request (format's kIoWrite, kIoFlush, ...) from the
// kernel's "rwbs" letters ("WS", "FWFS", "R", "F").
uint64_t block_io_kind(const char* rwbs, size_t n);

class PerfRings {
 public:
  struct Options {
    // Off until `pid` calls execve (record: the child waits for us before
    // its exec); otherwise on at once (a process already running).
    bool enable_on_exec = false;
    size_t ring_bytes = 256 << 10;  // per CPU, a power of two of pages
    // The sched tracepoints beside the switch records: the state a thread
    // blocked in (S sleeping, D uninterruptible) and who woke it. They need
    // tracefs and root or CAP_PERFMON; without them, refused() says why.
    bool sched_detail = true;
    bool switches = true;  // the switch records (off: only the tracepoints asked for)
    // raw_syscalls:sys_enter/sys_exit: every system call of the threads,
    // its number, arguments and result. Same needs; while on, every
    // thread of the machine takes the kernel's slower system-call path.
    bool syscalls = false;
    // The page faults of the threads (the kernel's software events, minor
    // and major), with the address and the instruction that took them.
    // Allowed unprivileged for the program's own code; the faults the
    // kernel takes on its behalf (copying into a fresh buffer in read())
    // need root or CAP_PERFMON, and refused() says when they are missing.
    bool faults = false;
    // CPU samples: each thread's instruction every 1/sample_hz s of its
    // CPU time (the kernel's cpu-clock; 0: none). Unprivileged, of the
    // program's own code; the kernel's part needs root or CAP_PERFMON.
    uint32_t sample_hz = 0;
    // With samples: each one's call path too, unwound from a copy of the
    // top of the thread's stack (sample_unwind.h).
    bool sample_stacks = false;
    // Block I/O: the requests the threads begin (block:block_io_start, in
    // their own context) and, from a tracefs instance, every completion
    // (block:block_rq_complete, in the device's interrupt: the caller
    // keeps those of the requests it saw begin). Root.
    bool io = false;
    // The threads of a running process to follow (attach): each one's
    // events, and those of what it starts from now on. Empty: `pid`
    // alone, and what it starts (record: the program before its exec).
    std::vector<pid_t> threads;
  };
  // Follows `pid` from now on (or from its exec): one ring per online CPU.
  static Result<std::unique_ptr<PerfRings>> open(pid_t pid, const Options& options);
  ~PerfRings();
  PerfRings(const PerfRings&) = delete;
  PerfRings& operator=(const PerfRings&) = delete;

  // The descriptors to poll (POLLIN: a ring is a quarter full; POLLHUP:
  // every thread followed has ended).
  void add_poll_fds(std::vector<pollfd>& fds) const;
  // Every record waiting, ring by ring (each ring in its CPU's order; the
  // caller orders across CPUs by time). Returns how many.
  size_t drain(const std::function<void(const SysRecord&)>& f);
  size_t cpus() const { return rings_.size(); }
  size_t ring_bytes() const { return rings_.empty() ? 0 : rings_.front().data_bytes; }
  // The event sets asked for that the kernel refused, each with why and
  // the fix ("sleep states and wakers: ..."); the switch records still come.
  const std::vector<std::string>& refused() const { return refused_; }
  bool has_sched_detail() const { return switch_tp_.id != 0; }
  bool has_syscalls() const { return enter_tp_.id != 0; }
  bool has_faults() const { return !fault_ids_.empty(); }
  bool has_samples() const { return !sample_ids_.empty(); }
  bool has_io() const { return io_done_ != nullptr; }
  uint64_t sample_period_ns() const { return sample_period_ns_; }
  bool has_sample_stacks() const { return unwinder_ != nullptr && has_samples(); }
  // Whether the faults taken in the kernel are in (root or CAP_PERFMON).
  bool has_kernel_faults() const { return kernel_faults_; }

 private:
  struct Ring {
    int fd = -1;
    std::vector<int> event_fds;  // tracepoints and faults, writing into fd's ring
    uint32_t cpu = 0;
    uint8_t* base = nullptr;  // the control page, then the data
    size_t map_bytes = 0;
    size_t data_bytes = 0;
  };
  PerfRings() = default;
  static Result<std::unique_ptr<PerfRings>> open_sized(pid_t pid, const Options& options);
  void decode(const Ring& r, const uint8_t* rec, uint16_t type, uint16_t misc, uint16_t size,
              const std::function<void(const SysRecord&)>& f);
  // A sample's call path, from its copy of the user registers and stack
  // (`p` to `end`: the record after its CPU), into s.frames.
  void unwind_sample(const uint8_t* p, const uint8_t* end, SysRecord& s);
  // Tells the unwinder what the rings say the processes map (before the
  // samples of any ring are read).
  void note_maps();
  // Opens the tracepoints of one event set on every ring; false (and
  // nothing left open of that set) when the kernel refuses.
  bool open_tracepoints(pid_t pid, const Options& options, const std::string& set,
                        const std::vector<std::pair<const char*, Tracepoint*>>& tps, const char* system);
  // Opens the event `a` on every ring (writing into its ring); the ids the
  // kernel gave them go into `ids`. False (nothing left open) and errno
  // in `error` when the kernel refuses.
  bool open_on_rings(pid_t pid, perf_event_attr a, std::vector<uint64_t>& ids, int& error, std::string& why);
  // The software events `configs` on every ring, their ids into `ids`
  // (each's own list), with `sample_type` more than the base: with the
  // kernel's part first, else without it (`kernel` says which) and a word
  // on what is missing (`set`, `kernel_part`); refused() says why when
  // neither may be had.
  bool open_software(pid_t pid, perf_event_attr a, const std::string& set, const std::string& kernel_part,
                     const std::vector<std::pair<uint64_t, std::vector<uint64_t>*>>& configs, bool& kernel);
  // The page-fault events on every ring (refused() says what is missing).
  void open_faults(pid_t pid, const Options& options);
  // The CPU-clock sampling events on every ring.
  void open_samples(pid_t pid, const Options& options);
  // The block I/O tracepoints: the threads' own, and every CPU's completions.
  void open_io(pid_t pid, const Options& options);
  // Closes the last `n` events opened on every ring (each on every thread followed).
  void close_last(size_t n);
  std::vector<Ring> rings_;
  std::vector<pid_t> targets_;      // the threads the events follow (and, inherited, what they start)
  std::vector<size_t> event_fds_;  // per event opened on the rings: its descriptors on each ring (one per target)
  std::vector<std::string> refused_;
  Tracepoint switch_tp_, waking_tp_, enter_tp_, exit_tp_, io_start_tp_;
  std::unique_ptr<TraceInstance> io_done_;  // block_rq_complete, of every CPU
  // The fields decode() reads, looked up once when the tracepoints open.
  struct Fields {
    Tracepoint::Field prev_state, waking_flags, waking_pid, enter_id, enter_args, exit_id, exit_ret;
    Tracepoint::Field io_dev, io_sector, io_bytes, io_rwbs;
  } f_;
  std::vector<uint64_t> major_ids_, minor_ids_;  // the fault events' ids (PERF_SAMPLE_IDENTIFIER)
  std::vector<uint64_t> fault_ids_;              // both
  bool kernel_faults_ = false;
  std::vector<uint64_t> sample_ids_;  // the CPU-clock sampling events' ids
  uint64_t sample_period_ns_ = 0;
  bool kernel_samples_ = false;
  std::unique_ptr<SampleUnwinder> unwinder_;  // with sample_stacks
  uint64_t frames_[SampleUnwinder::kMaxFrames];
  std::vector<pid_t> ended_, forget_;  // processes ended this round, and the one before
  std::vector<uint64_t> heads_;        // each ring's head when note_maps() read it
  std::vector<uint8_t> scratch_;  // a record that wraps around the ring's end
};

// The online CPUs, from /sys/devices/system/cpu/online ("0-3,6").
std::vector<uint32_t> online_cpus();
// Why perf_event_open failed with `error`, and what fixes it: a line for
// the user (the paranoid setting read from /proc).
std::string perf_open_advice(int error);

}  // namespace callscope::recorder
