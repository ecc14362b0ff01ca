// The D language engine: compiles a script (clauses of probe descriptions,
// predicates and actions) and runs its clauses when the driver fires a
// probe. Knows nothing of traces: the driver (driver.h) decides which
// probes exist, matches them against the clauses' descriptions, and fires
// them in time order with what each firing knows (Firing).
//
// Owner: the language (lexer, parser, compiler, interpreter: engine.cpp and
// friends). The driver and the CLI use this interface; additions only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "query/aggregate.h"
#include "query/value.h"

namespace callscope::query {

struct CompileOptions {
  std::vector<std::string> macro_args;         // $1 ... $9 as given on the command line
  std::optional<uint64_t> target;              // $target: the pid of -c/-p, else unset (an error if used)
  std::map<std::string, std::string> options;  // -x name=value (quiet from -q is "quiet")
};

// A probe description as written in a clause, macros expanded, fields as
// D reads a partial description: from the right ("entry" is ":::entry",
// "foo:entry" is "::foo:entry"). Empty = any.
struct ProbeSpec {
  std::string provider, module, function, name;
  std::string text;  // as written (for messages)
  int line = 0;
  bool target = false;  // the provider was written with $target (pid$target): one process of several
};

class Program {
 public:
  virtual ~Program() = default;
  virtual size_t clause_count() const = 0;
  virtual const std::vector<ProbeSpec>& clause_probes(size_t clause) const = 0;
  // Options from #pragma D option and CompileOptions::options, merged
  // (command line wins): quiet, aggsortkey, aggsortrev, aggsortpos,
  // aggsortkeypos, and those accepted and ignored (bufsize, ...).
  virtual const std::map<std::string, std::string>& options() const = 0;
  // Whether a clause reads the firing thread's call path (ustack(),
  // ustackdepth, ucaller, depth): without, and without return probes, the
  // driver need not keep it.
  virtual bool reads_stack() const = 0;
  // Whether a clause reads what other functions' calls make of the firing
  // one (selfduration: its time less its callees'). A recording of the
  // probed functions alone would answer it wrongly.
  virtual bool reads_other_calls() const { return false; }
  // Whether a clause reads vtimestamp (a thread's time on a CPU): the
  // context switches are needed (kernel_probes.h).
  virtual bool reads_vtimestamp() const { return false; }
};

// `file` names the script in errors: "failed to compile script x.d: line 3:
// syntax error near "}"" (for -n, the text is a probe description and
// clauses, as dtrace's -n takes them).
Result<std::shared_ptr<const Program>> compile(std::string_view source, const std::string& file,
                                               const CompileOptions& options);

// A probe the driver offers. Strings are ids in the engine's Strings.
struct ProbeInfo {
  uint32_t id = 0;  // D's `id`: unique, stable for a run
  uint32_t provider = 0, module = 0, function = 0, name = 0;
};

// args[] that are structures (translators.h): the thread sched:::wakeup
// woke, the request of io:::start and io:::done. Strings are ids.
struct FiringArgs {
  struct Thread {
    int64_t pid = 0, ppid = 0, tid = 0;
    uint32_t fname = 0, psargs = 0;
  } woken;
  struct Io {
    uint64_t dev = 0, sector = 0, bytes = 0;
    int64_t flags = 0;  // B_READ, B_WRITE, B_DONE, B_ERROR (translators.h)
    int64_t error = 0;
    uint32_t dev_name = 0;  // the kernel's name of the device ("vda")
    uint32_t unknown = 0;   // "<unknown>": what a block request does not know (its file)
  } io;
};

// What one firing knows. Integers as D types them.
struct Firing {
  const ProbeInfo* probe = nullptr;
  uint32_t thread = 0;   // the trace's thread index: self-> variables are per thread
  uint32_t process = 0;  // the trace's process index: stacks and symbols
  int64_t pid = 0, ppid = 0, tid = 0;
  uint32_t execname = 0;        // string id
  uint64_t timestamp = 0;       // ns on the trace's clock (monotonic)
  uint64_t walltimestamp = 0;   // ns since the epoch
  // arg0 ... arg9, the provider's (pid entry: arg0 the function's
  // address, which no script reads: compile refuses argN at pid probes;
  // syscall entry: the call's six arguments).
  int64_t arg[10] = {};
  // Whose self-> variables the firing sees: `thread`'s, but for the thread
  // of an image exec'd, the thread that called exec (kNoSelf: `thread`'s).
  static constexpr uint32_t kNoSelf = ~uint32_t{0};
  uint32_t self_thread = kNoSelf;
  int32_t errno_value = 0;  // syscall probes: the thread's last system call's error (0: none)
  int32_t cpu = -1;         // sched probes: the CPU (-1: not known)
  uint64_t vtimestamp = 0;  // ns the thread has been on a CPU since it began (from the context switches)
  // curpsinfo and curlwpsinfo (translators.h): the process's arguments
  // (a string id; 0: none known) and the thread's state as lwpsinfo_t's
  // pr_sname says it ('O' on a CPU, 'S' asleep, 'R' runnable).
  uint32_t psargs = 0;
  char sname = 'O';
  // The probe's structured arguments: sched:::wakeup's woken thread,
  // io's request (null elsewhere).
  const FiringArgs* structs = nullptr;
  // Return probes (beyond D): the call's inclusive and exclusive time, ns.
  uint64_t duration = 0, selfduration = 0;
  // The thread's call path at the firing, outermost first (for a return
  // probe: including the returning function). ustack(), ucaller,
  // ustackdepth, depth come from it.
  const uint64_t* frames = nullptr;
  uint32_t nframes = 0;
};

class Engine {
 public:
  // Output goes to `out` (appended); the driver writes it out after each
  // firing that added to it.
  Engine(std::shared_ptr<const Program> program, Strings& strings, Stacks& stacks, std::string& out);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Clause `clause` runs when probe `probe` fires (in clause order).
  void enable(const ProbeInfo& probe, size_t clause);
  // The dtrace:::ERROR probe, fired by the engine on a runtime fault
  // (division by zero, a bad substr, ...) with D's message on stderr-like
  // output ("dtrace: error on enabled probe ID N (ID P: pid123:a.out:f:entry):
  // divide-by-zero in action #1 at DIF offset 0" becomes callscope's own
  // wording, same shape).
  void set_error_probe(const ProbeInfo& probe);

  // Runs the clauses enabled for f.probe. Cheap when none is.
  void fire(const Firing& f);
  // Every clause enabled for `probe` only counts, keyed by the probe's
  // names (`@[probefunc] = count();`): n firings of it are one
  // fire_tally(f, n), whenever before anything else reads aggregations.
  bool tallies(uint32_t probe) const;
  void fire_tally(const Firing& f, uint64_t n);
  // exit(n) was called: the driver stops firing (but fires END).
  bool exited() const;
  int exit_status() const;
  // After END: prints every aggregation not printed yet (D's order and
  // format) and whatever speculations and buffers hold.
  void finish();
  // Runtime faults so far (each fired ERROR and printed a message).
  uint64_t errors() const;
  // Messages for stderr (runtime faults, drops), taken by the driver.
  std::string take_messages();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace callscope::query
