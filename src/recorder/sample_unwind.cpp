#include "recorder/sample_unwind.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif

namespace callscope::recorder {
namespace {

// No separate debug files: the modules' own .eh_frame and .debug_frame
// only (a search of /usr/lib/debug, or debuginfod's network, has no place
// beside a running program).
int no_debuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word, char**) {
  return -1;
}
char* debuginfo_path = nullptr;
const Dwfl_Callbacks kModuleCallbacks = {
    dwfl_linux_proc_find_elf,
    no_debuginfo,
    nullptr,
    &debuginfo_path,
};

// A process's modules are read again at most this often when a sample's
// instruction is in none of them (a dlopen since, or an exec).
constexpr uint64_t kRereadNs = 200'000'000;

uint64_t mono_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__)
// The registers asked for, in the order the kernel gives them (ascending
// PERF_REG_X86_*): ax bx cx dx si di bp sp ip, then r8-r15.
constexpr uint64_t kRegsMask = ((1ull << (PERF_REG_X86_IP + 1)) - 1) |
                               (((1ull << (PERF_REG_X86_R15 - PERF_REG_X86_R8 + 1)) - 1) << PERF_REG_X86_R8);
constexpr unsigned kRegsCount = 17;
constexpr unsigned kIp = 8, kSp = 7;
// The DWARF registers of x86-64 (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi,
// 6 rbp, 7 rsp, 8-15 r8-r15, 16 the return address: the pc) from them.
void dwarf_regs(const uint64_t* r, Dwarf_Word* d) {
  d[0] = r[0];
  d[1] = r[3];
  d[2] = r[2];
  d[3] = r[1];
  d[4] = r[4];
  d[5] = r[5];
  d[6] = r[6];
  d[7] = r[7];
  for (unsigned i = 0; i < 8; ++i) d[8 + i] = r[9 + i];
  d[16] = r[8];
}
#else
constexpr uint64_t kRegsMask = 0;
constexpr unsigned kRegsCount = 0;
constexpr unsigned kIp = 0, kSp = 0;
void dwarf_regs(const uint64_t*, Dwarf_Word*) {}
#endif

}  // namespace

// One process's modules (libdwfl reads each one's CFI once) and the sample
// being unwound, which the callbacks below read.
struct SampleUnwinder::Process {
  struct Map {
    uint64_t start, len, pgoff;
    std::string path;
  };
  std::vector<Map> maps;  // told by the kernel (`told`), or read from /proc, in the order mapped
  bool told = false;
  bool dirty = false;    // maps changed since dwfl was made
  uint64_t exec_ns = 0;  // its last exec's time: a sample before it is of the image before
  Dwfl* dwfl = nullptr;
  uint64_t read_ns = 0;  // when its maps were last read from /proc
  pid_t tid = 0;
  const uint64_t* regs = nullptr;
  const uint8_t* stack = nullptr;
  uint64_t size = 0;
  bool outside = false;  // a read fell outside the copy of the stack
  ~Process() {
    if (dwfl) dwfl_end(dwfl);
  }
};

namespace {

using Process = SampleUnwinder::Process;

pid_t next_thread(Dwfl*, void* arg, void** thread_arg) {
  if (*thread_arg) return 0;
  *thread_arg = arg;
  return static_cast<Process*>(arg)->tid;
}

bool get_thread(Dwfl*, pid_t, void* arg, void** thread_arg) {
  *thread_arg = arg;
  return true;
}

// Memory at the time of the sample is the stack's copy, nothing else: the
// process has run on since.
bool memory_read(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  auto* p = static_cast<Process*>(arg);
  const uint64_t sp = p->regs[kSp];
  if (addr < sp || addr - sp > p->size || p->size - (addr - sp) < sizeof *result) {
    p->outside = true;
    return false;
  }
  std::memcpy(result, p->stack + (addr - sp), sizeof *result);
  return true;
}

bool set_initial_registers(Dwfl_Thread* thread, void* arg) {
  auto* p = static_cast<Process*>(arg);
  Dwarf_Word d[17];
  dwarf_regs(p->regs, d);
  if (!dwfl_thread_state_registers(thread, 0, 17, d)) return false;
  dwfl_thread_state_register_pc(thread, p->regs[kIp]);
  return true;
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    next_thread, get_thread, memory_read, set_initial_registers, nullptr, nullptr,
};

struct Walk {
  uint64_t* out;
  uint32_t n = 0;
  bool first = true;
  bool in_kernel = false;
  bool full = false;
  bool stray = false;  // a frame in no module
};

int on_frame(Dwfl_Frame* state, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0) return DWARF_CB_ABORT;
  const bool first = w->first;
  w->first = false;
  // The first frame is the sampled instruction itself (the sample has it),
  // or, in the kernel, where the thread entered it.
  if (first && !w->in_kernel) return DWARF_CB_OK;
  if (w->n == SampleUnwinder::kMaxFrames) {
    w->full = true;
    return DWARF_CB_ABORT;
  }
  const uint64_t at = activation ? pc : pc - 1;
  if (!dwfl_addrmodule(dwfl_thread_dwfl(dwfl_frame_thread(state)), at)) {
    w->stray = true;
    return DWARF_CB_ABORT;
  }
  w->out[w->n++] = at;
  return DWARF_CB_OK;
}

}  // namespace

uint64_t SampleUnwinder::regs_mask() { return kRegsMask; }
unsigned SampleUnwinder::regs_count() { return kRegsCount; }

SampleUnwinder::SampleUnwinder() = default;
SampleUnwinder::~SampleUnwinder() {
  if (vdso_fd_ >= 0) ::close(vdso_fd_);
}

void SampleUnwinder::forget(pid_t pid) { processes_.erase(pid); }

SampleUnwinder::Process& SampleUnwinder::slot(pid_t pid) {
  std::unique_ptr<Process>& p = processes_[pid];
  if (!p) p = std::make_unique<Process>();
  return *p;
}

namespace {

// Files and the vDSO; not anonymous code (a JIT's), which has no rules.
bool unwindable(const std::string& path) { return !path.empty() && (path[0] == '/' || path == "[vdso]"); }

// The executable mappings of `pid` now, from /proc (false: not readable).
bool read_maps(pid_t pid, std::vector<SampleUnwinder::Process::Map>& out) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return false;
  std::vector<SampleUnwinder::Process::Map> found;
  for (std::string line; std::getline(maps, line);) {
    unsigned long lo = 0, hi = 0, off = 0;
    char perms[8] = {};
    int name_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &name_at) < 4 ||
        perms[2] != 'x' || name_at <= 0 || static_cast<size_t>(name_at) >= line.size())
      continue;
    std::string file = line.substr(static_cast<size_t>(name_at));
    if (unwindable(file)) found.push_back({lo, hi - lo, off, std::move(file)});
  }
  if (found.empty()) return false;  // (a process that has ended has none)
  out = std::move(found);
  return true;
}

}  // namespace

void SampleUnwinder::mapped(pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff, const std::string& path) {
  if (!unwindable(path)) return;
  Process& p = slot(pid);
  // Told of a process neither begun nor exec'd while followed (attach), or
  // read from /proc so far: what it mapped before comes from /proc first.
  if (!p.told) read_maps(pid, p.maps);
  p.told = true;
  p.dirty = true;
  // A mapping over an earlier one (a library unloaded, another loaded
  // there) replaces it.
  std::erase_if(p.maps, [&](const Process::Map& m) { return m.start < start + len && start < m.start + m.len; });
  p.maps.push_back({start, len, pgoff, path});
}

void SampleUnwinder::exec(pid_t pid, uint64_t time_ns) {
  processes_.erase(pid);
  Process& p = slot(pid);
  p.told = true;  // its maps follow
  p.exec_ns = time_ns;
}

void SampleUnwinder::forked(pid_t parent, pid_t child) {
  if (parent == child) return;
  processes_.erase(child);  // (a pid used again)
  auto it = processes_.find(parent);
  if (it == processes_.end() || !it->second->told) return;
  Process& c = slot(child);
  c.told = true;
  c.maps = it->second->maps;
}

namespace {

// The vDSO of this process, in a file of its own (libdwfl reads modules
// from files): every process of this kernel maps the same one.
int copy_vdso() {
  const auto at = ::getauxval(AT_SYSINFO_EHDR);
  if (!at) return -1;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("[vdso]") == std::string::npos) continue;
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || lo != at || hi <= lo) return -1;
    const int fd = ::memfd_create("callscope-vdso", MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (::write(fd, reinterpret_cast<const void*>(lo), hi - lo) != static_cast<ssize_t>(hi - lo)) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  return -1;
}

// The load bias of a file mapped at `start` from file offset `pgoff`: the
// mapping is of the PT_LOAD segment holding that offset.
bool load_bias(int fd, uint64_t start, uint64_t pgoff, uint64_t& bias) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (!elf) return false;
  size_t n = 0;
  bool found = false;
  if (elf_getphdrnum(elf, &n) == 0)
    for (size_t i = 0; i < n && !found; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      const uint64_t page_off = ph.p_offset & ~uint64_t{0xfff};
      if (pgoff < page_off || pgoff >= ph.p_offset + ph.p_filesz) continue;
      bias = start - pgoff - ((ph.p_vaddr & ~uint64_t{0xfff}) - page_off);
      found = true;
    }
  elf_end(elf);
  return found;
}

}  // namespace

SampleUnwinder::Process* SampleUnwinder::process(pid_t pid, uint64_t ip) {
  if (processes_.size() >= 1024 && !processes_.count(pid)) processes_.clear();  // (ended ones not forgotten)
  Process& p = slot(pid);
  // Its modules from /proc, at most every kRereadNs: a process the kernel
  // has not told of (attach: it mapped them before it was followed), or a
  // module lost from what it said (a full ring, a thread's mapping attach
  // does not follow).
  if ((!p.told && !p.dwfl) || (p.dwfl && !p.dirty && !dwfl_addrmodule(p.dwfl, ip))) {
    const uint64_t now = mono_now();
    if (now - p.read_ns >= kRereadNs) {
      p.read_ns = now;
      p.dirty = read_maps(pid, p.maps);
    }
  }
  // Made again when the maps changed (modules added to a Dwfl whose state
  // is attached were not found by its lookups).
  if (p.dwfl && p.dirty) {
    dwfl_end(p.dwfl);
    p.dwfl = nullptr;
  }
  p.dirty = false;
  if (!p.dwfl) {
    if (p.maps.empty()) return nullptr;
    p.dwfl = dwfl_begin(&kModuleCallbacks);
    if (!p.dwfl) return nullptr;
    std::set<std::pair<std::string, uint64_t>> reported;  // (path, bias)
    dwfl_report_begin(p.dwfl);
    for (const Process::Map& m : p.maps) {
      const bool vdso = m.path == "[vdso]";
      if (vdso && vdso_fd_ == -2) vdso_fd_ = copy_vdso();
      const int fd = vdso ? (vdso_fd_ >= 0 ? ::dup(vdso_fd_) : -1) : ::open(m.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      uint64_t bias = 0;
      if (elf_version(EV_CURRENT) == EV_NONE || !load_bias(fd, m.start, m.pgoff, bias) ||
          !reported.insert({m.path, bias}).second) {  // (another segment of a file reported)
        ::close(fd);
        continue;
      }
      const std::string name = vdso ? "[vdso]" : m.path.substr(m.path.rfind('/') + 1);
      // (libdwfl owns the descriptor once it accepts it)
      if (!dwfl_report_elf(p.dwfl, name.c_str(), vdso ? "[vdso]" : m.path.c_str(), fd, bias, true)) ::close(fd);
    }
    dwfl_report_end(p.dwfl, nullptr, nullptr);
  }
  if (dwfl_pid(p.dwfl) < 0 && !dwfl_attach_state(p.dwfl, nullptr, pid, &kThreadCallbacks, &p)) return nullptr;
  return &p;
}

uint32_t SampleUnwinder::unwind(pid_t pid, pid_t tid, uint64_t time_ns, bool in_kernel, const uint64_t* regs,
                                const uint8_t* stack, uint64_t size, uint64_t* out, bool& cut) {
  cut = false;
  if (!kRegsCount) return 0;
  Process* p = process(pid, regs[kIp]);
  // (a sample taken before the exec the kernel has told of since, read in
  // the same round: of the image before, whose modules are gone)
  if (!p || time_ns < p->exec_ns) {
    cut = true;
    return 0;
  }
  p->tid = tid;
  p->regs = regs;
  p->stack = stack;
  p->size = size;
  p->outside = false;
  Walk w{out};
  w.in_kernel = in_kernel;
  const int r = dwfl_getthread_frames(p->dwfl, tid, on_frame, &w);
  // The walk ends at the outermost frame (_start, a thread's clone: their
  // rules say there is no caller; or code without rules, as ld.so's entry
  // -- libdwfl says so with an error at times, as at an end without one).
  // It was cut when it needed the stack past the copy (libdwfl ends such a
  // walk without an error), had no room, came to a frame in no module (a
  // JIT's code, or garbage), or found no frame at all.
  cut = w.full || w.stray || p->outside || (r != 0 && w.n == 0);
  p->regs = nullptr;
  p->stack = nullptr;
  return w.n;
}

}  // namespace callscope::recorder
