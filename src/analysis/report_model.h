// From a trace to the call trees `callscope report` shows: one streaming pass
// per selected thread builds a tree keyed by address, then each distinct
// (process, address) is resolved once, through a caller-supplied resolver
// (the symbolizer in the CLI, a table in tests), and the tree is re-keyed by
// function id. Functions are identified by (name, module): two addresses that
// resolve to the same name in the same module are one function.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/call_tree.h"
#include "analysis/window.h"
#include "common/result.h"
#include "format/trace_reader.h"

namespace callscope::analysis {

struct FunctionInfo {
  std::string name;    // as displayed: "parse", or "app+0x1234" when unknown
  std::string module;  // file name of the module, "" when unknown
  std::string file;    // source file, "" when unknown
  uint32_t line = 0;   // 0 when unknown
};

// `tick`: when the address was seen (the trace tick of a call to it), or
// kNoTick when that is not known. It matters only where several modules held
// the address over time (a library closed and another loaded where it was).
using Resolver = std::function<FunctionInfo(uint32_t process, uint64_t addr, uint64_t tick)>;

struct ThreadProfile {
  uint32_t thread = 0;  // index in TraceReader::threads()
  CallTree tree;        // keyed by index into Profile::functions
  uint64_t events = 0;
  uint64_t lost_events = 0;
  uint64_t stray_exits = 0;
  uint64_t waits = 0;       // waits for the recorder (the "[waited for recorder]" node)
  uint64_t wait_ticks = 0;  // their time in all
};

struct Profile {
  std::vector<FunctionInfo> functions;  // keys of every tree index this
  std::vector<ThreadProfile> threads;   // in the order asked for
  // The trees' Stats::wait is known: the trace has the kernel's context
  // switches of these threads (trace 1.9).
  bool has_waits = false;
};

// Threads chosen by `specs`: each a thread index as shown by `callscope info`,
// or a glob on thread names (the last name, or any name the thread was given
// while it ran); all threads when `specs` is empty. A spec that matches
// nothing is an error.
Result<std::vector<uint32_t>> select_threads(const format::TraceReader& trace, const std::vector<std::string>& specs);

// Reads the events of `threads` and builds their trees. Calls at an address
// that several modules held over time are told apart by the module loaded at
// the time of the call (format/module_map.h), each resolved with that time.
// With a window, only what happened inside it (analysis/window.h).
Result<Profile> build_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                              const Resolver& resolve, TickWindow window = {});

// Where the threads of `threads` waited: a tree per thread of the call
// paths their stretches off the CPU began in (analysis/off_cpu.h), each
// stretch a leaf under its innermost frame named by its reason
// ("[futex]", "[runnable]"), whose self time is the stretch; every frame's
// total is the time off the CPU under it, its calls the stretches. Without
// the kernel's context switches in the trace the trees are empty.
Result<Profile> build_wait_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                   const Resolver& resolve);
// Where the threads of `threads` took their page faults (record --events
// faults): each fault a leaf named by its kind ("[minor fault]", "[major
// fault]", "... in the kernel]": analysis/off_cpu.h) under the call path it
// happened in, and under the function of the instruction that took it when
// that is not the innermost traced one (memset, called by it). A node's
// calls are the faults under it; it has no time.
Result<Profile> build_fault_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                    const Resolver& resolve);
// Where the threads of `threads` ran, from their CPU samples (record
// --sample HZ): each sample under the call path it was taken in, in the
// function of its instruction (a frame under the innermost traced one when
// that is another: memcpy, called by it), or in a "[kernel]" leaf; its
// time the CPU time it stands for. A node's calls are its samples, its
// self time theirs, its total time that of the samples under it.
Result<Profile> build_sample_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                     const Resolver& resolve);
// The block I/O requests the threads of `threads` began (record --events
// io): each a leaf named by its kind and device ("[write vda]",
// analysis/off_cpu.h; "[write vda, completion not seen]" when the trace
// has none) under the call path that began it; its time is the request's
// latency, from its start to the device's completion. A node's calls are
// the requests under it.
Result<Profile> build_io_profile(format::TraceReader& trace, const std::vector<uint32_t>& threads,
                                 const Resolver& resolve);

// Profile-mode traces: the trees of `threads` in the snapshots `dumps`
// (indexes into TraceReader::dumps()); a thread found in several (two
// processes' final states) is merged. Nodes that are excluded, or hold
// nothing and have nothing below them (cleared paths), are left out.
Result<Profile> build_profile_from_dumps(format::TraceReader& trace, const std::vector<uint32_t>& dumps,
                                         const std::vector<uint32_t>& threads, const Resolver& resolve);
// The snapshots a report shows by default: the final state of every process.
std::vector<uint32_t> final_dumps(const format::TraceReader& trace);
// The number of each snapshot (by index into TraceReader::dumps()): the K of
// `report --dump K`, of `info` and of `ctl PID dump`'s "ok dump K". That is
// DumpRecord::seq, the session's one numbering of every process's snapshots
// (the final states after them); traces whose processes numbered their
// snapshots apart (made before that: the same seq in two processes) are
// numbered by their place in the trace, as they were shown then.
std::vector<uint32_t> snapshot_numbers(const format::TraceReader& trace);
// The index of snapshot K, or nullopt.
std::optional<uint32_t> snapshot_index(const format::TraceReader& trace, uint32_t k);
// The indexes of the snapshots by number: the order they were taken in,
// every process's together (the trace keeps each process's apart).
std::vector<uint32_t> snapshots_by_number(const format::TraceReader& trace);
// Adds one thread's snapshot nodes into `tree` (keyed by address); returns
// the calls added. A node flagged open holds one call still in progress (in
// Stats::open); `open_counted` false (traces before 1.2) adds that call,
// which those nodes held only the time of. For tests and
// build_profile_from_dumps.
uint64_t add_snapshot(CallTree& tree, const std::vector<format::ProfileNodeRecord>& nodes, bool open_counted = true);

// Builds one thread's tree from events given in memory (for tests), with
// `resolve` called as in build_profile.
void add_thread(Profile& p, uint32_t thread, uint32_t process, const std::vector<format::TraceEvent>& events,
                const Resolver& resolve);

// Leaves out of every tree of `p` the time that the functions whose name
// matches one of `globs` spend in themselves (their self time: for a
// function that waits, the time blocked in the uninstrumented code it calls,
// such as sleep, poll or a lock): it is taken out of their self and total
// time and of the total of every frame above them. Calls, min, max and first
// stay as measured. Returns the ticks left out per thread (in the order of
// p.threads); nothing is left out when `globs` is empty.
std::vector<uint64_t> leave_out_self_time(Profile& p, const std::vector<std::string>& globs);

// A thread's lifetime in the trace (its last tick minus its first), in
// ticks: what its observed time is a share of.
uint64_t wall_ticks(const format::TraceReader& trace, uint32_t thread);

// The trees of all threads of `p` merged into one (functions are already
// shared by name, so this merges call paths by function name).
CallTree merged_tree(const Profile& p);

}  // namespace callscope::analysis
