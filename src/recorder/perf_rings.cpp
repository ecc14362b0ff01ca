#include "recorder/perf_rings.h"

#include "format/trace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace callscope::recorder {
namespace {

// Every record ends with this (sample_id_all, sample_type TID|TIME|CPU|
// IDENTIFIER: the event's id, which says what a sample is).
struct SampleId {
  uint32_t pid, tid;
  uint64_t time;
  uint32_t cpu, reserved;
  uint64_t id;
};
static_assert(sizeof(SampleId) == 32);
// A tracepoint's sample after its id: TID, TIME, CPU, then RAW.
struct TracepointHead {
  uint32_t pid, tid;
  uint64_t time;
  uint32_t cpu, reserved;
};
// A fault's or a CPU sample's record after its id: IP, TID, TIME, then
// (a fault's) ADDR; the CPU after them is the ring's.
struct IpHead {
  uint64_t ip;
  uint32_t pid, tid;
  uint64_t time;
};

constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

int perf_event_open(perf_event_attr* attr, pid_t pid, int cpu) {
  return static_cast<int>(::syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

std::string read_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

}  // namespace

uint64_t block_io_kind(const char* rwbs, size_t n) {
  // blk_fill_rwbs: F (a flush first), then the operation (W, D or DE, F
  // a flush alone, R, N), then F (FUA), A (read-ahead), S (sync), M (meta).
  std::string s(rwbs, ::strnlen(rwbs, n));
  uint64_t kind = 0;
  size_t i = 0;
  if (s.size() >= 2 && s[0] == 'F' && std::strchr("WDRFN", s[1])) {
    kind |= format::kIoFlush;
    i = 1;
  }
  if (i < s.size()) {
    switch (s[i++]) {
      case 'W': kind |= format::kIoWrite; break;
      case 'D':
        kind |= format::kIoDiscard;
        if (i < s.size() && s[i] == 'E') ++i;
        break;
      case 'F': kind |= format::kIoFlush; break;
      case 'R': break;
      default: kind |= format::kIoOther; break;  // N: write-zeroes, zone management, ...; E: secure erase
    }
  }
  for (; i < s.size(); ++i) {
    if (s[i] == 'F') kind |= format::kIoFua;
    if (s[i] == 'S') kind |= format::kIoSync;
    if (s[i] == 'M') kind |= format::kIoMeta;
  }
  return kind;
}

std::vector<uint32_t> online_cpus() {
  std::vector<uint32_t> cpus;
  std::stringstream in(read_line("/sys/devices/system/cpu/online"));
  std::string range;
  while (std::getline(in, range, ',')) {
    unsigned a = 0, b = 0;
    const int n = std::sscanf(range.c_str(), "%u-%u", &a, &b);
    if (n == 1) b = a;
    if (n >= 1)
      for (unsigned c = a; c <= b && c < 65536; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) {
    const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < n; ++c) cpus.push_back(static_cast<uint32_t>(c));
  }
  return cpus;
}

std::string perf_open_advice(int error) {
  const std::string paranoid = read_line("/proc/sys/kernel/perf_event_paranoid");
  switch (error) {
    case EACCES:
    case EPERM:
      if (!paranoid.empty() && std::atoi(paranoid.c_str()) >= 3)
        return "this kernel lets only privileged users use perf events (kernel.perf_event_paranoid=" + paranoid +
               "): run as root, give callscope CAP_PERFMON (setcap cap_perfmon+ep), or "
               "'sysctl kernel.perf_event_paranoid=2'";
      return "not allowed to watch the process (kernel.perf_event_paranoid=" + paranoid +
             "; a process of another user needs CAP_PERFMON or root)";
    case ENOENT:
    case ENOSYS:
    case EOPNOTSUPP:
      return "this kernel has no perf events (CONFIG_PERF_EVENTS), or not this kind";
    case EMFILE:
    case ENFILE:
      return "out of file descriptors (one per CPU, event set and thread followed is needed): raise the limit "
             "(ulimit -n)";
    case ESRCH:
      return "the process has ended";
    default:
      return std::strerror(error);
  }
}

namespace {

// What every event of the rings shares: the thread and what inherits it,
// from its exec or now, on CLOCK_MONOTONIC, each record with its thread,
// time and CPU.
perf_event_attr base_attr(const PerfRings::Options& options);

// The side-band event of a ring or of a thread writing into one: switches,
// forks and exits, and, for unwinding samples after their process has
// ended, what the processes map and exec.
perf_event_attr sideband_attr(const PerfRings::Options& options) {
  perf_event_attr a = base_attr(options);
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.context_switch = options.switches;
  a.task = 1;
  a.mmap = a.mmap2 = a.comm = a.comm_exec = options.sample_hz && options.sample_stacks && SampleUnwinder::regs_count();
  // Side-band records: the thread's kernel time need not be watched for
  // them (nor may it be, unprivileged).
  a.exclude_kernel = 1;
  return a;
}

perf_event_attr base_attr(const PerfRings::Options& options) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.sample_period = 1;
  a.sample_type = kSampleType;
  a.sample_id_all = 1;
  a.inherit = 1;
  a.disabled = options.enable_on_exec;
  a.enable_on_exec = options.enable_on_exec;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  a.exclude_hv = 1;
  return a;
}

}  // namespace

Result<std::unique_ptr<PerfRings>> PerfRings::open(pid_t pid, const Options& options) {
  // Rings past the locked-memory limit (kernel.perf_event_mlock_kb, for
  // a user without CAP_IPC_LOCK) are refused: smaller ones, down to 64
  // KiB, before giving up.
  Options o = options;
  for (;;) {
    auto p = open_sized(pid, o);
    if (p || o.ring_bytes <= (64 << 10) || p.error().message().find("locked-memory") == std::string::npos) return p;
    o.ring_bytes /= 2;
  }
}

Result<std::unique_ptr<PerfRings>> PerfRings::open_sized(pid_t pid, const Options& options) {
  const long page = ::sysconf(_SC_PAGESIZE);
  size_t data = static_cast<size_t>(page);
  while (data < options.ring_bytes) data *= 2;
  std::unique_ptr<PerfRings> p(new PerfRings());
  p->targets_ = {pid};
  for (pid_t t : options.threads)
    if (t != pid) p->targets_.push_back(t);
  for (uint32_t cpu : online_cpus()) {
    perf_event_attr a = sideband_attr(options);
    a.watermark = 1;
    a.wakeup_watermark = static_cast<uint32_t>(data / 4);
    const int fd = perf_event_open(&a, pid, static_cast<int>(cpu));
    if (fd < 0) {
      const int e = errno;
      return Error("cannot watch process " + std::to_string(pid) + "'s context switches on CPU " +
                   std::to_string(cpu) + ": " + perf_open_advice(e));
    }
    Ring r;
    r.fd = fd;
    r.cpu = cpu;
    r.data_bytes = data;
    r.map_bytes = data + static_cast<size_t>(page);
    void* m = ::mmap(nullptr, r.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return Error("cannot map the ring of CPU " + std::to_string(cpu) + " (" + std::to_string(data >> 10) +
                   " KiB): " +
                   (e == EPERM ? std::string("over the locked-memory limit (kernel.perf_event_mlock_kb, "
                                             "ulimit -l)")
                               : std::string(std::strerror(e))));
    }
    r.base = static_cast<uint8_t*>(m);
    p->rings_.push_back(r);
  }
  // The other threads of a running process: their switches and what they
  // start, into the same rings (one that ended meanwhile is not followed).
  for (size_t t = 1; t < p->targets_.size(); ++t)
    for (Ring& r : p->rings_) {
      perf_event_attr a = sideband_attr(options);
      const int fd = perf_event_open(&a, p->targets_[t], static_cast<int>(r.cpu));
      if (fd < 0 && errno == ESRCH) break;
      if (fd < 0 || ::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r.fd) != 0) {
        const int e = errno;
        if (fd >= 0) ::close(fd);
        return Error("cannot watch thread " + std::to_string(p->targets_[t]) + "'s context switches on CPU " +
                     std::to_string(r.cpu) + ": " + perf_open_advice(e));
      }
      r.event_fds.push_back(fd);
    }
  if (options.sched_detail &&
      !p->open_tracepoints(pid, options, "sleep states (S, D) and wakers",
                           {{"sched_switch", &p->switch_tp_}, {"sched_waking", &p->waking_tp_}}, "sched"))
    p->switch_tp_ = p->waking_tp_ = Tracepoint{};
  if (options.syscalls &&
      !p->open_tracepoints(pid, options, "system calls", {{"sys_enter", &p->enter_tp_}, {"sys_exit", &p->exit_tp_}},
                           "raw_syscalls"))
    p->enter_tp_ = p->exit_tp_ = Tracepoint{};
  if (options.faults) p->open_faults(pid, options);
  if (options.sample_hz) p->open_samples(pid, options);
  if (options.io) p->open_io(pid, options);
  Fields& f = p->f_;
  f.prev_state = p->switch_tp_.field("prev_state");
  f.waking_flags = p->waking_tp_.field("common_flags");
  f.waking_pid = p->waking_tp_.field("pid");
  f.enter_id = p->enter_tp_.field("id");
  f.enter_args = p->enter_tp_.field("args");
  f.exit_id = p->exit_tp_.field("id");
  f.exit_ret = p->exit_tp_.field("ret");
  f.io_dev = p->io_start_tp_.field("dev");
  f.io_sector = p->io_start_tp_.field("sector");
  f.io_bytes = p->io_start_tp_.field("bytes");
  f.io_rwbs = p->io_start_tp_.field("rwbs");
  return p;
}

bool PerfRings::open_on_rings(pid_t pid, perf_event_attr a, std::vector<uint64_t>& ids, int& error,
                              std::string& why) {
  std::vector<std::pair<size_t, int>> opened;  // (ring, fd)
  const auto undo = [&] {
    for (auto [ring, fd] : opened) {
      ::close(fd);
      rings_[ring].event_fds.pop_back();
    }
    return false;
  };
  std::vector<uint64_t> got;
  size_t targets = 0;  // those still running
  for (pid_t target : pid < 0 ? std::vector<pid_t>{pid} : targets_) {
    bool ended = false;
    for (size_t i = 0; i < rings_.size() && !ended; ++i) {
      const int fd = perf_event_open(&a, target, static_cast<int>(rings_[i].cpu));
      if (fd < 0 && errno == ESRCH && target != targets_.front()) {
        // A thread of a running process ended meanwhile: not followed.
        ended = true;
        for (size_t j = 0; j < i; ++j) {
          ::close(opened.back().second);
          rings_[opened.back().first].event_fds.pop_back();
          opened.pop_back();
          got.pop_back();
        }
        break;
      }
      if (fd < 0) {
        error = errno;
        why = perf_open_advice(error);
        return undo();
      }
      opened.emplace_back(i, fd);
      rings_[i].event_fds.push_back(fd);
      uint64_t id = 0;
      if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rings_[i].fd) != 0 || ::ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
        error = errno;
        why = std::string("cannot share the CPU's ring: ") + std::strerror(error);
        return undo();
      }
      got.push_back(id);
    }
    if (!ended) ++targets;
  }
  event_fds_.push_back(targets);
  ids.insert(ids.end(), got.begin(), got.end());
  return true;
}

bool PerfRings::open_software(pid_t pid, perf_event_attr a, const std::string& set, const std::string& kernel_part,
                              const std::vector<std::pair<uint64_t, std::vector<uint64_t>*>>& configs, bool& kernel) {
  // The kernel's part first; where only the program's own code may be
  // watched (perf_event_paranoid 2, no CAP_PERFMON), that, and a word on
  // what is missing.
  a.type = PERF_TYPE_SOFTWARE;
  for (int with_kernel = 1; with_kernel >= 0; --with_kernel) {
    a.exclude_kernel = with_kernel ? 0 : 1;
    std::vector<std::vector<uint64_t>> got(configs.size());
    int error = 0;
    std::string why;
    size_t opened = 0;
    for (; opened < configs.size(); ++opened) {
      a.config = configs[opened].first;
      if (!open_on_rings(pid, a, got[opened], error, why)) break;
    }
    if (opened == configs.size()) {
      for (size_t i = 0; i < configs.size(); ++i) *configs[i].second = got[i];
      kernel = with_kernel != 0;
      if (!kernel)
        refused_.push_back(kernel_part + ": watching the kernel needs root or CAP_PERFMON "
                                         "(kernel.perf_event_paranoid=" +
                           read_line("/proc/sys/kernel/perf_event_paranoid") + ")");
      return true;
    }
    close_last(opened);
    if (!with_kernel || (error != EACCES && error != EPERM)) {
      refused_.push_back(set + ": " + why);
      return false;
    }
  }
  return false;
}

void PerfRings::open_faults(pid_t pid, const Options& options) {
  perf_event_attr a = base_attr(options);
  a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
  if (open_software(pid, a, "page faults",
                    "page faults the kernel takes for the program (copying into its memory in a system call)",
                    {{PERF_COUNT_SW_PAGE_FAULTS_MAJ, &major_ids_}, {PERF_COUNT_SW_PAGE_FAULTS_MIN, &minor_ids_}},
                    kernel_faults_)) {
    fault_ids_ = major_ids_;
    fault_ids_.insert(fault_ids_.end(), minor_ids_.begin(), minor_ids_.end());
  }
}

void PerfRings::open_samples(pid_t pid, const Options& options) {
  // A sample every period of the thread's CPU time, the period fixed (not
  // a frequency the kernel adjusts): every sample stands for as much CPU.
  perf_event_attr a = base_attr(options);
  a.sample_type |= PERF_SAMPLE_IP;
  a.sample_period = 1'000'000'000ull / options.sample_hz;
  const bool stacks = options.sample_stacks && SampleUnwinder::regs_count();
  if (stacks) {
    a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = SampleUnwinder::regs_mask();
    a.sample_stack_user = SampleUnwinder::kStackBytes;
  }
  if (open_software(pid, a, "CPU samples", "CPU samples of the kernel's code (in system calls, faults)",
                    {{PERF_COUNT_SW_CPU_CLOCK, &sample_ids_}}, kernel_samples_)) {
    sample_period_ns_ = a.sample_period;
    if (stacks) unwinder_ = std::make_unique<SampleUnwinder>();
  }
}

void PerfRings::open_io(pid_t pid, const Options& options) {
  // Who began a request is known where it began: block_io_start (6.5),
  // in the thread's context. Before it, block_rq_issue, which an idle
  // queue fires there too (a busy one, later, in a kernel worker's).
  const std::string set = "block I/O";
  const char* start = "block_io_start";
  if (!read_tracepoint("block", start) && read_tracepoint("block", "block_rq_issue")) start = "block_rq_issue";
  if (!open_tracepoints(pid, options, set, {{start, &io_start_tp_}}, "block")) {
    io_start_tp_ = Tracepoint{};
    return;
  }
  // The completion comes in the device's interrupt, in whatever thread
  // ran then -- often the idle one, from which perf delivers no sample:
  // read through a tracefs instance, each kept by the caller only when it
  // ends a request a traced thread began.
  auto done = TraceInstance::open("block", "block_rq_complete");
  if (done) {
    io_done_ = std::move(*done);
    return;
  }
  close_last(1);
  io_start_tp_ = Tracepoint{};
  refused_.push_back(set + ": the completions: " + done.error().message());
}

bool PerfRings::open_tracepoints(pid_t pid, const Options& options, const std::string& set,
                                 const std::vector<std::pair<const char*, Tracepoint*>>& tps, const char* system) {
  size_t opened = 0;  // events on each ring so far
  const auto refuse = [&](const std::string& why) {
    close_last(opened);
    refused_.push_back(set + ": " + why);
    return false;
  };
  for (auto [name, tp] : tps) {
    auto t = read_tracepoint(system, name);
    if (!t) return refuse(t.error().message());
    *tp = *t;
    perf_event_attr a = base_attr(options);
    a.type = PERF_TYPE_TRACEPOINT;
    a.config = tp->id;
    a.sample_type |= PERF_SAMPLE_RAW;
    // A tracepoint fires in the kernel: its records are the kernel's.
    a.exclude_kernel = 0;
    std::vector<uint64_t> ids;
    int e = 0;
    std::string why;
    if (!open_on_rings(pid, a, ids, e, why))
      return refuse(e == EACCES || e == EPERM ? "the kernel's tracepoints need root or CAP_PERFMON "
                                                "(kernel.perf_event_paranoid=" +
                                                    read_line("/proc/sys/kernel/perf_event_paranoid") + ")"
                                              : why);
    ++opened;
  }
  return true;
}

void PerfRings::close_last(size_t n) {
  for (; n > 0 && !event_fds_.empty(); --n) {
    for (Ring& r : rings_)
      for (size_t i = 0; i < event_fds_.back() && !r.event_fds.empty(); ++i) {
        ::close(r.event_fds.back());
        r.event_fds.pop_back();
      }
    event_fds_.pop_back();
  }
}

PerfRings::~PerfRings() {
  // The mapping holds the event: both go, or the kernel keeps recording.
  for (Ring& r : rings_) {
    for (int fd : r.event_fds) ::close(fd);
    if (r.base) ::munmap(r.base, r.map_bytes);
    if (r.fd >= 0) ::close(r.fd);
  }
}

void PerfRings::add_poll_fds(std::vector<pollfd>& fds) const {
  for (const Ring& r : rings_) fds.push_back({r.fd, POLLIN, 0});
}

void PerfRings::unwind_sample(const uint8_t* p, const uint8_t* end, SysRecord& s) {
  // After the CPU: REGS_USER (the ABI, then the registers unless it is
  // none: a kernel thread), STACK_USER (the size copied, the bytes, and how
  // many of them were in use, when the size is not 0).
  uint64_t abi = 0, size = 0, used = 0;
  const unsigned nregs = SampleUnwinder::regs_count();
  if (end - p < 8) return;
  std::memcpy(&abi, p, 8);
  p += 8;
  if (abi == PERF_SAMPLE_REGS_ABI_NONE) return;
  uint64_t regs[32];
  if (nregs > 32 || static_cast<size_t>(end - p) < 8 * nregs + 8) return;
  std::memcpy(regs, p, 8 * nregs);
  p += 8 * nregs;
  std::memcpy(&size, p, 8);
  p += 8;
  const auto avail = static_cast<uint64_t>(end - p);
  if (size == 0 || avail < 8 || size > avail - 8) return;
  std::memcpy(&used, p + size, 8);
  s.n_frames = unwinder_->unwind(static_cast<pid_t>(s.pid), static_cast<pid_t>(s.tid), s.time_ns, s.in_kernel, regs,
                                 p, std::min(used, size), frames_, s.frames_cut);
  s.frames = frames_;
}

void PerfRings::note_maps() {
  // Every ring's first: a CPU's sample may come before another's record
  // of the mapping it ran in. Processes that ended a round ago are let go
  // (a CPU's last samples of one may come a round after its exit).
  for (pid_t pid : forget_) unwinder_->forget(pid);
  forget_ = std::move(ended_);
  ended_.clear();
  // In time order across the rings (each record's sample id says when):
  // a process that exec'd on one CPU maps its libraries on another.
  // The rounds's samples are read up to the heads seen here: a record of
  // a mapping written since is told next round, before the samples after it.
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> told;
  heads_.clear();
  for (const Ring& r : rings_) {
    auto* pg = reinterpret_cast<perf_event_mmap_page*>(r.base);
    const uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
    heads_.push_back(head);
    const uint8_t* data = r.base + (pg->data_offset ? pg->data_offset : r.map_bytes - r.data_bytes);
    const uint64_t mask = r.data_bytes - 1;
    for (uint64_t tail = pg->data_tail; tail < head;) {
      perf_event_header h;
      std::memcpy(&h, data + (tail & mask), sizeof h);
      if (h.size < sizeof h || tail + h.size > head) break;
      if ((h.type == PERF_RECORD_MMAP2 || h.type == PERF_RECORD_COMM || h.type == PERF_RECORD_FORK) &&
          h.size >= sizeof h + sizeof(SampleId) + 16) {
        std::vector<uint8_t> rec(h.size);
        for (size_t i = 0; i < h.size; ++i) rec[i] = data[(tail + i) & mask];
        SampleId id;
        std::memcpy(&id, rec.data() + h.size - sizeof id, sizeof id);
        told.emplace_back(id.time, std::move(rec));
      }
      tail += h.size;
    }
  }
  std::stable_sort(told.begin(), told.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [time, rec] : told) {
    perf_event_header h;
    std::memcpy(&h, rec.data(), sizeof h);
    const uint8_t* b = rec.data() + sizeof h;
    const size_t room = h.size - sizeof h - sizeof(SampleId);
    uint32_t ids[4] = {};
    std::memcpy(ids, b, std::min(room, sizeof ids));
    if (h.type == PERF_RECORD_MMAP2 && room > 64) {
      // pid, tid; addr, len, pgoff; the file's ids (24 bytes); prot,
      // flags; the file's name, NUL-ended and padded; the sample id
      uint64_t v[3];
      std::memcpy(v, b + 8, sizeof v);
      const char* name = reinterpret_cast<const char*>(b + 64);
      unwinder_->mapped(static_cast<pid_t>(ids[0]), v[0], v[1], v[2], std::string(name, strnlen(name, room - 64)));
    } else if (h.type == PERF_RECORD_COMM && (h.misc & PERF_RECORD_MISC_COMM_EXEC)) {
      unwinder_->exec(static_cast<pid_t>(ids[0]), time);
    } else if (h.type == PERF_RECORD_FORK && ids[0] == ids[2]) {
      unwinder_->forked(static_cast<pid_t>(ids[1]), static_cast<pid_t>(ids[0]));
    }
  }
}

size_t PerfRings::drain(const std::function<void(const SysRecord&)>& f) {
  size_t n = 0;
  if (unwinder_) note_maps();
  for (size_t ri = 0; ri < rings_.size(); ++ri) {
    const Ring& r = rings_[ri];
    auto* pg = reinterpret_cast<perf_event_mmap_page*>(r.base);
    const uint64_t head = unwinder_ ? heads_[ri] : __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = pg->data_tail;
    const uint8_t* data = r.base + (pg->data_offset ? pg->data_offset : r.map_bytes - r.data_bytes);
    const uint64_t mask = r.data_bytes - 1;
    while (tail < head) {
      const size_t off = tail & mask;
      perf_event_header h;
      std::memcpy(&h, data + off, sizeof h);  // records are 8-byte aligned: a header never wraps
      if (h.size < sizeof h || tail + h.size > head) break;  // damaged: what is left is dropped below
      const uint8_t* rec = data + off;
      if (off + h.size > r.data_bytes) {
        scratch_.resize(h.size);
        const size_t first = r.data_bytes - off;
        std::memcpy(scratch_.data(), data + off, first);
        std::memcpy(scratch_.data() + first, data, h.size - first);
        rec = scratch_.data();
      }
      decode(r, rec, static_cast<uint16_t>(h.type), h.misc, h.size, f);
      ++n;
      tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
  }
  if (io_done_)
    n += io_done_->drain([&](uint64_t time_ns, const std::string& text) {
      BlockCompletion c;
      if (!parse_block_completion(text, c)) return;
      SysRecord s;
      s.kind = SysRecord::Kind::kIoDone;
      s.time_ns = time_ns;
      s.dev = c.dev;
      s.sector = c.sector;
      s.error = c.error;
      f(s);
    });
  return n;
}

void PerfRings::decode(const Ring& r, const uint8_t* rec, uint16_t type, uint16_t misc, uint16_t size,
                       const std::function<void(const SysRecord&)>& f) {
  const size_t body = sizeof(perf_event_header);
  if (size < body + sizeof(SampleId)) return;
  SampleId id;
  std::memcpy(&id, rec + size - sizeof id, sizeof id);
  SysRecord s;
  s.pid = id.pid;
  s.tid = id.tid;
  s.time_ns = id.time;
  s.cpu = r.cpu;
  const size_t room = size - body - sizeof id;  // bytes between the header and the sample id
  switch (type) {
    case PERF_RECORD_SWITCH:
      if (!(misc & PERF_RECORD_MISC_SWITCH_OUT))
        s.kind = SysRecord::Kind::kSwitchIn;
      else if (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
        s.kind = SysRecord::Kind::kSwitchOutPreempt;
      else
        s.kind = SysRecord::Kind::kSwitchOut;
      break;
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT: {
      if (room < 24) return;
      if (type == PERF_RECORD_EXIT && unwinder_) {
        uint32_t ids[4];
        std::memcpy(ids, rec + body, sizeof ids);
        if (ids[0] == ids[2]) ended_.push_back(static_cast<pid_t>(ids[0]));  // a process, not a thread
      }
      uint32_t v[4];
      uint64_t time;
      std::memcpy(v, rec + body, sizeof v);
      std::memcpy(&time, rec + body + 16, sizeof time);
      s.kind = type == PERF_RECORD_FORK ? SysRecord::Kind::kFork : SysRecord::Kind::kExit;
      s.pid = v[0];
      s.parent_pid = v[1];
      s.tid = v[2];
      s.parent_tid = v[3];
      s.time_ns = time;
      break;
    }
    case PERF_RECORD_LOST: {
      if (room < 16) return;
      s.kind = SysRecord::Kind::kLost;
      std::memcpy(&s.lost, rec + body + 8, sizeof s.lost);
      break;
    }
    case PERF_RECORD_SAMPLE: {
      // The event's id first: a fault (IP, TID, TIME, ADDR, CPU) or a
      // tracepoint (TID, TIME, CPU, then RAW: its size and the
      // tracepoint's record, which begins with its type id).
      uint64_t event = 0;
      std::memcpy(&event, rec + body, sizeof event);
      const size_t after = body + sizeof event;
      const bool sample = std::find(sample_ids_.begin(), sample_ids_.end(), event) != sample_ids_.end();
      const bool fault = std::find(fault_ids_.begin(), fault_ids_.end(), event) != fault_ids_.end();
      if (sample || fault) {
        IpHead h;
        const size_t need = after + sizeof h + (fault ? sizeof s.addr : 0) + 8;  // and the CPU
        if (size < need) return;
        std::memcpy(&h, rec + after, sizeof h);
        s.pid = h.pid;
        s.tid = h.tid;
        s.time_ns = h.time;
        s.ip = h.ip;
        s.in_kernel = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
        if (sample) {
          s.kind = SysRecord::Kind::kSample;
          s.period = sample_period_ns_;
          if (unwinder_) unwind_sample(rec + need, rec + size, s);
        } else {
          s.kind = SysRecord::Kind::kPageFault;
          std::memcpy(&s.addr, rec + after + sizeof h, sizeof s.addr);
          s.major = std::find(major_ids_.begin(), major_ids_.end(), event) != major_ids_.end();
        }
        break;
      }
      TracepointHead th;
      uint32_t raw_size = 0;
      if (size < after + sizeof th + 4) return;
      std::memcpy(&th, rec + after, sizeof th);
      std::memcpy(&raw_size, rec + after + sizeof th, 4);
      const uint8_t* raw = rec + after + sizeof th + 4;
      if (raw_size < 8 || after + sizeof th + 4 + raw_size > size) return;
      s.pid = th.pid;
      s.tid = th.tid;
      s.time_ns = th.time;
      uint16_t type_id = 0;
      std::memcpy(&type_id, raw, 2);
      if (type_id == switch_tp_.id && switch_tp_.id) {
        s.kind = SysRecord::Kind::kSleepState;
        s.state = static_cast<uint64_t>(Tracepoint::value(raw, raw_size, f_.prev_state));
      } else if (type_id == waking_tp_.id && waking_tp_.id) {
        s.kind = SysRecord::Kind::kWakeup;
        // In an interrupt (hard, soft, NMI: the common_flags bits) the
        // thread on the CPU is not the waker: no one is named.
        const bool irq = (Tracepoint::value(raw, raw_size, f_.waking_flags) & 0x58) != 0;
        s.parent_pid = irq ? 0 : s.pid;
        s.parent_tid = irq ? 0 : s.tid;
        s.pid = 0;
        s.tid = static_cast<uint32_t>(Tracepoint::value(raw, raw_size, f_.waking_pid));
      } else if (type_id == enter_tp_.id && enter_tp_.id) {
        s.kind = SysRecord::Kind::kSyscallEnter;
        s.nr = Tracepoint::value(raw, raw_size, f_.enter_id);
        if (f_.enter_args.size >= sizeof s.args && f_.enter_args.offset + sizeof s.args <= raw_size)
          std::memcpy(s.args, raw + f_.enter_args.offset, sizeof s.args);
      } else if (type_id == exit_tp_.id && exit_tp_.id) {
        s.kind = SysRecord::Kind::kSyscallExit;
        s.nr = Tracepoint::value(raw, raw_size, f_.exit_id);
        s.ret = Tracepoint::value(raw, raw_size, f_.exit_ret);
      } else if (type_id == io_start_tp_.id && io_start_tp_.id) {
        s.kind = SysRecord::Kind::kIoStart;
        s.dev = static_cast<uint32_t>(Tracepoint::value(raw, raw_size, f_.io_dev));
        s.sector = static_cast<uint64_t>(Tracepoint::value(raw, raw_size, f_.io_sector));
        s.bytes = static_cast<uint32_t>(Tracepoint::value(raw, raw_size, f_.io_bytes));
        if (f_.io_rwbs.size && f_.io_rwbs.offset + f_.io_rwbs.size <= raw_size)
          s.io_kind = block_io_kind(reinterpret_cast<const char*>(raw + f_.io_rwbs.offset), f_.io_rwbs.size);
      } else {
        return;
      }
      break;
    }
    case PERF_RECORD_LOST_SAMPLES: {
      if (room < 8) return;
      s.kind = SysRecord::Kind::kLost;
      std::memcpy(&s.lost, rec + body, sizeof s.lost);
      break;
    }
    default:
      return;
  }
  f(s);
}

}  // namespace callscope::recorder
