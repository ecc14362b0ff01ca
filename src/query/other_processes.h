// What a pid$target description leaves out of a trace of several processes.
//
// $target is one process (the one `record` or -c started); a program that
// forks leaves the others' calls in the trace, and a dtrace user who wrote
// pid$target expects to be told rather than to see silence. The driver
// matches each description written with $target a second time with pid*
// as its provider: the probes only that twin matches are counted where
// they would fire, per process, and never fired, so the query's result is
// what it was. note() says how many other processes had such events and
// how to see them (docs/query.md, "$target").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "query/engine.h"

namespace callscope::query {

class Catalog;

class OtherProcesses {
 public:
  // A clause's description; only those written with $target are kept.
  void add(const ProbeSpec& spec);
  bool empty() const { return twins_.empty(); }
  // The ids of the probes a twin matches (every process's: the caller
  // keeps those no clause enabled).
  std::vector<uint32_t> match(Catalog& catalog) const;
  // Whether a twin matches probe `id` (one the trace listed later).
  bool matches(const Catalog& catalog, uint32_t id) const;
  // A firing of such a probe in process `process` (index in the trace).
  void count(uint32_t process) {
    if (process >= hits_.size()) hits_.resize(process + 1);
    ++hits_[process];
  }
  // "pid$target matched process 1234 only; 2 other processes had 1,523
  // matching events: use pid* (or pid1235, pid1236) to see them", or ""
  // when no other process had one. `pid_of` gives a process index's pid.
  template <typename PidOf>
  std::string note(PidOf pid_of) const {
    std::vector<std::pair<int64_t, uint64_t>> by_pid;
    for (uint32_t i = 0; i < hits_.size(); ++i)
      if (hits_[i]) by_pid.emplace_back(pid_of(i), hits_[i]);
    return note_of(by_pid);
  }

 private:
  // (pid, events) of each other process with events, in trace order.
  std::string note_of(const std::vector<std::pair<int64_t, uint64_t>>& by_pid) const;
  std::vector<ProbeSpec> twins_;
  std::string target_;  // the expanded provider of the first: "pid1234"
  std::vector<uint64_t> hits_;  // per process index
};

}  // namespace callscope::query
