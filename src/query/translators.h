// D's translated structures, as far as a recording can fill them:
// curpsinfo and curlwpsinfo (psinfo_t, lwpsinfo_t) at every probe that fires
// in a thread; args[0]/args[1] of sched:::wakeup (the woken thread's
// lwpsinfo_t and psinfo_t); args[0..2] of io:::start and io:::done
// (bufinfo_t, devinfo_t, fileinfo_t). A script reads their members
// (`curpsinfo->pr_psargs`, `args[0]->b_bcount`); a member the recording
// cannot fill (`pr_pri`) is refused when the script compiles, never given
// as 0. Also the constants scripts compare them with (SSLEEP, B_READ, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "query/ast.h"
#include "query/engine.h"
#include "query/value.h"

namespace callscope::query {

// bufinfo_t's b_flags, as dtrace's io.d defines them.
inline constexpr int64_t kBufDone = 0x2, kBufError = 0x4, kBufRead = 0x40, kBufWrite = 0x100;

enum class Member : uint8_t {
  // psinfo_t: curpsinfo, or args[1] of sched:::wakeup (the woken thread's process)
  kPrPid, kPrPpid, kPrFname, kPrPsargs,
  // lwpsinfo_t: curlwpsinfo, or args[0] of sched:::wakeup (the woken thread)
  kPrLwpid, kPrState, kPrSname, kPrOnpro,
  // bufinfo_t: args[0] of io:::start, io:::done
  kBFlags, kBBcount, kBBlkno, kBLblkno, kBError, kBEdev,
  // devinfo_t: args[1]
  kDevMajor, kDevMinor, kDevInstance, kDevName, kDevStatname, kDevPathname,
  // fileinfo_t: args[2] (not known for a block request: "<unknown>")
  kFiName, kFiDirname, kFiPathname, kFiOffset, kFiFs, kFiMount,
};

// Whose members: the firing thread's (cur*) or the probe's arguments'.
enum class MemberOf : uint8_t { kCurrent, kArgs };

struct MemberInfo {
  Member member;
  MemberOf of;
  Type type;
  uint8_t bytes;  // integers: 4 (int, pid_t), 1 (char), 8
  const char* d_type;
};

// `text` as the parser writes a member access: "curpsinfo->pr_pid",
// "args[0]->b_bcount". An error says why it cannot be read at `probe`
// (or at all); `probe` null: no probe to check against (a BEGIN clause is
// one: cur* there is callscope's own, and refused).
Result<MemberInfo> find_member(const std::string& text, const ProbeSpec& probe);
// The same for a clause: it must be valid at each of its probes.
Result<MemberInfo> find_member(const std::string& text, const std::vector<ProbeSpec>& probes);

// The D constant a name stands for (SSLEEP, SRUN, B_READ, B_WRITE, ...),
// as dtrace's translators define them.
std::optional<int64_t> d_constant(const std::string& name);

// A member's value at a firing (the driver filled Firing's psargs, sname and
// extra for the probes that have them).
Value member_value(Member m, MemberOf of, const Firing& f);

}  // namespace callscope::query
