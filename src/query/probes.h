// The probes a trace offers (docs/query.md, "Probes"), and matching D's
// probe descriptions against them.
//
// A Catalog lists, as dtrace -l would: dtrace:::BEGIN/END/ERROR; the proc
// provider's events; the alloc provider's (one probe per allocating or
// freeing function: alloc:::malloc, alloc:::free, ...); the syscall
// provider's entry and return of every system call of this machine, and
// the sched, pf and io providers' probes, when the trace holds those events
// (record --events); pid<PID> entry and return probes for every function
// symbol of every module of each traced process; and the profile
// provider's tick-N and profile-N, created on demand when a description
// names an interval (as dtrace's profile provider does). Probe ids are
// stable for a catalog: BEGIN 1, END 2, ERROR 3, then in the order built.
//
// The catalog knows nothing of trace files: CatalogInput describes the
// processes and their modules' functions, so that matching can be tested
// on its own; catalog_input() fills it from a trace (reading each module's
// ELF symbols).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "query/engine.h"

namespace callscope::format {
class TraceReader;
}

namespace callscope::query {

enum class ProbeKind : uint8_t {
  kBegin,
  kEnd,
  kError,
  kEntry,    // pid: a function's entry
  kReturn,   // pid: its return
  kProc,     // proc: see ProcEvent
  kTick,     // profile: tick-N, once per interval
  kProfile,  // profile: profile-N, once per interval in every live thread
  kAlloc,    // alloc: an allocation or free of op `op` (record --memory)
  kSyscallEntry,   // syscall: system call `syscall` begins (record --events syscalls)
  kSyscallReturn,  // syscall: it returns
  kSched,          // sched: see SchedEvent (record --events sched, the default)
  kFault,          // pf: a page fault of kind `fault` (record --events faults)
  kIo,             // io: a block I/O request begins (`io_done` false) or completes (record --events io)
};

enum class FaultKind : uint8_t {
  kAny,    // pf:::fault, every one
  kMinor,  // pf:::minor, served from memory
  kMajor,  // pf:::major (DTrace for Windows' hardflt), the page read from a disk
};

enum class SchedEvent : uint8_t {
  kOnCpu,    // the thread got a CPU
  kOffCpu,   // it left its CPU (after sleep or preempt)
  kSleep,    // it is about to leave its CPU to wait (blocked)
  kPreempt,  // it is about to leave its CPU still runnable (preempted, or yielded)
  kWakeup,   // a thread made another runnable (fires in the waker)
};
inline constexpr int kSchedEvents = 5;

enum class ProcEvent : uint8_t {
  kStart,         // a process starts (in its first thread)
  kExecSuccess,   // a process image replaced by exec starts
  kCreate,        // a process created a child (in the parent)
  kExit,          // a process ends
  kLwpStart,      // a thread starts
  kLwpExit,       // a thread ends
  kModuleLoad,    // a module (the executable, a library, dlopen) is mapped
  kModuleUnload,  // dlclose
  kLost,          // the runtime lost events (arg0: how many)
  kExec,          // a process is about to be replaced by exec (in the image that calls it)
  kExecFailure,   // an exec failed (arg0: the error; from the system calls: kernel_probes.h)
};
inline constexpr int kProcEvents = 11;

struct Probe {
  uint32_t id = 0;
  ProbeKind kind = ProbeKind::kBegin;
  std::string provider, module, function, name;
  // pid probes: the process (index in the trace) and the function (index
  // into Catalog::functions()).
  uint32_t process = 0;
  uint32_t function_index = 0;
  ProcEvent proc = ProcEvent::kStart;
  uint64_t interval_ns = 0;  // tick, profile
  uint8_t op = 0;            // alloc: the format::AllocOp
  int64_t syscall = -1;      // syscall: the system call's number
  SchedEvent sched = SchedEvent::kOnCpu;
  FaultKind fault = FaultKind::kAny;
  bool io_done = false;
  // "provider:module:function:name"
  std::string full_name() const { return provider + ":" + module + ":" + function + ":" + name; }
};

// A function symbol of a module.
struct FunctionSymbol {
  std::string name;     // demangled
  std::string mangled;  // as in the symbol table ("" when the same as name)
  uint64_t addr = 0;    // absolute, in the process (symbol value + load bias)
};

struct CatalogInput {
  struct Module {
    std::string name;  // file name: "app", "libc.so.6"
    bool main = false;  // the process's executable: "a.out" matches it
    std::vector<FunctionSymbol> functions;
  };
  struct Process {
    int64_t pid = 0;
    std::vector<Module> modules;
  };
  std::vector<Process> processes;  // in the trace's order
  // The kernel's events the trace holds: the syscall, sched, pf and io
  // providers' probes exist when it does. When not, a description naming
  // the provider outright is refused with why, by provider ("the trace has
  // no system calls: ..."); without one (a catalog of no trace's, for what
  // every trace has) it matches nothing.
  bool syscalls = false, sched = false, faults = false, io = false;
  std::map<std::string, std::string> missing;
  void all_kernel_providers() { syscalls = sched = faults = io = true; }
};

// A pid probe's function: one per (process, module, name); a name defined
// at several addresses (static functions of several files) is one probe.
struct PidFunction {
  uint32_t process = 0;
  std::string module;
  std::string name, mangled;
  bool main_module = false;
  uint32_t entry_probe = 0, return_probe = 0;  // ids
};

class Catalog {
 public:
  explicit Catalog(const CatalogInput& input);
  // A trace being recorded: processes and modules it lists now that it did
  // not before (`more` holds every process so far, with only its new
  // modules). Their probes get the next ids.
  void extend(const CatalogInput& more);

  // The probes, in id order (ids from 1); clock probes are added by match().
  const std::vector<Probe>& probes() const { return probes_; }
  const Probe& probe(uint32_t id) const { return probes_[id - 1]; }
  const std::vector<PidFunction>& functions() const { return functions_; }
  // The function of `process` whose symbol starts at `addr`, if any. Where
  // several names start there (aliases: libc's lseek, lseek64, llseek), the
  // one named `prefer` when it is one of them (the symbolizer's choice: the
  // name the program imports), else the first listed.
  std::optional<uint32_t> function_at(uint32_t process, uint64_t addr, std::string_view prefer = {}) const;
  // Whether several names start at `addr`.
  bool has_aliases(uint32_t process, uint64_t addr) const;
  // A function the symbol tables did not list (a stripped module, a file
  // that is gone): given a name by the caller, it gets its entry and return
  // probes now. Returns its index in functions().
  uint32_t add_function(uint32_t process, uint64_t addr, const std::string& module, const std::string& name,
                        bool main_module);

  // The ids of the probes `spec` matches (macros already expanded; fields
  // as D reads them). Creates tick-N and profile-N when a description
  // names one. An offset probe (pid123:a.out:main:4) is an error, and so is
  // a description naming the syscall or sched provider (no glob) of a
  // trace without those events; no match is an empty list (the caller
  // decides, -Z).
  Result<std::vector<uint32_t>> match(const ProbeSpec& spec);
  // Whether `spec` may match functions of a module whose symbols could not
  // be read (a file that is gone): their probes are made as they are
  // called, so a description naming such a module (no glob) is no error.
  bool may_match_later(const ProbeSpec& spec) const;
  // Whether `spec` matches probe `id` (for probes added after matching).
  bool matches(const ProbeSpec& spec, uint32_t id) const;

 private:
  uint32_t add(Probe p);
  std::vector<Probe> probes_;
  std::map<std::string, std::string> missing_;  // kernel providers the trace lacks, and why
  bool exec_failure_missing_ = false;           // proc:::exec-failure: no system calls to see it in
  std::vector<PidFunction> functions_;
  std::vector<int64_t> pids_;  // per process
  std::vector<std::vector<std::pair<std::string, bool>>> unlisted_;  // per process: (module, main) without symbols
  std::vector<std::unordered_map<uint64_t, uint32_t>> by_addr_;  // per process: addr -> function
  std::vector<std::unordered_map<uint64_t, std::vector<uint32_t>>> aliases_;  // per process: addr -> the other names
};

// Parses D's clock probe names: "tick-1s", "profile-997" (no unit: hz),
// "tick-500ms". nullopt when the text is not one, or below dtrace's 200 us
// minimum interval.
std::optional<uint64_t> clock_interval_ns(const std::string& name, const std::string& prefix);

// The sched provider's probe name of an event ("on-cpu").
const char* sched_probe_name(SchedEvent e);
// A live query's kernel providers: those whose events the recording
// hands it (`flags`, as a trace's info flags say them), and for the
// others `why` they are missing.
void live_kernel_providers(CatalogInput& in, uint32_t flags, const std::string& why);

// The alloc provider's probe name of a format::AllocOp ("malloc", "new-array",
// "pool-free"), "" for none.
const char* alloc_probe_name(uint8_t op);

// A probe description as -n, -P, -m, -f and -l take it, read from the right
// ("entry" is ":::entry"), $target and $1..$9 expanded. An unset $target
// or a missing macro argument is an error.
Result<ProbeSpec> parse_probe_description(const std::string& text, const CompileOptions& options);

// dtrace's wording for a description that matches nothing.
std::string no_match_message(const ProbeSpec& spec);

// What the catalog needs of a trace: the processes, their modules' function
// symbols read from the modules' files with libelf (a module whose file
// cannot be read has none listed: its functions get probes when first
// called, named by the symbolizer). `warnings` gets one line per module
// whose symbols could not be read.
// From `first_module` on (a trace that grew: the modules it lists since).
// Whether the trace holds system calls and context switches (syscall and
// sched probes) comes from its header: a trace recorded with --events
// syscalls says so even if no call was made.
CatalogInput catalog_input(format::TraceReader& trace, std::vector<std::string>& warnings,
                           size_t first_module = 0);

// dtrace -l's layout: "   ID   PROVIDER            MODULE ..." and a line per
// probe, its names terminal-safe (common/output_format.h).
std::string list_header();
std::string list_line(const Probe& p);

}  // namespace callscope::query
