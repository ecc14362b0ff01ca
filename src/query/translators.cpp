// D's translated structures (translators.h).
#include "query/translators.h"

#include <map>

namespace callscope::query {

namespace {

// dtrace's lwpsinfo_t pr_state values.
constexpr int64_t kSsleep = 1, kSrun = 2, kSonproc = 6;

enum class Struct : uint8_t { kPsinfo, kLwpsinfo, kBufinfo, kDevinfo, kFileinfo };

struct Row {
  Struct of;
  Member member;
  Type type;
  uint8_t bytes;
  const char* d_type;
};

const std::map<std::string, Row>& members() {
  static const std::map<std::string, Row> m = {
      {"pr_pid", {Struct::kPsinfo, Member::kPrPid, Type::kInt, 4, "pid_t"}},
      {"pr_ppid", {Struct::kPsinfo, Member::kPrPpid, Type::kInt, 4, "pid_t"}},
      {"pr_fname", {Struct::kPsinfo, Member::kPrFname, Type::kString, 8, "string"}},
      {"pr_psargs", {Struct::kPsinfo, Member::kPrPsargs, Type::kString, 8, "string"}},
      {"pr_lwpid", {Struct::kLwpsinfo, Member::kPrLwpid, Type::kInt, 4, "id_t"}},
      {"pr_state", {Struct::kLwpsinfo, Member::kPrState, Type::kInt, 4, "int"}},
      {"pr_sname", {Struct::kLwpsinfo, Member::kPrSname, Type::kInt, 1, "char"}},
      {"pr_onpro", {Struct::kLwpsinfo, Member::kPrOnpro, Type::kInt, 4, "processorid_t"}},
      {"b_flags", {Struct::kBufinfo, Member::kBFlags, Type::kInt, 4, "int"}},
      {"b_bcount", {Struct::kBufinfo, Member::kBBcount, Type::kUint, 8, "size_t"}},
      {"b_blkno", {Struct::kBufinfo, Member::kBBlkno, Type::kUint, 8, "uint64_t"}},
      {"b_lblkno", {Struct::kBufinfo, Member::kBLblkno, Type::kUint, 8, "uint64_t"}},
      {"b_error", {Struct::kBufinfo, Member::kBError, Type::kInt, 4, "int"}},
      {"b_edev", {Struct::kBufinfo, Member::kBEdev, Type::kUint, 8, "dev_t"}},
      {"dev_major", {Struct::kDevinfo, Member::kDevMajor, Type::kInt, 4, "int"}},
      {"dev_minor", {Struct::kDevinfo, Member::kDevMinor, Type::kInt, 4, "int"}},
      {"dev_instance", {Struct::kDevinfo, Member::kDevInstance, Type::kInt, 4, "int"}},
      {"dev_name", {Struct::kDevinfo, Member::kDevName, Type::kString, 8, "string"}},
      {"dev_statname", {Struct::kDevinfo, Member::kDevStatname, Type::kString, 8, "string"}},
      {"dev_pathname", {Struct::kDevinfo, Member::kDevPathname, Type::kString, 8, "string"}},
      {"fi_name", {Struct::kFileinfo, Member::kFiName, Type::kString, 8, "string"}},
      {"fi_dirname", {Struct::kFileinfo, Member::kFiDirname, Type::kString, 8, "string"}},
      {"fi_pathname", {Struct::kFileinfo, Member::kFiPathname, Type::kString, 8, "string"}},
      {"fi_offset", {Struct::kFileinfo, Member::kFiOffset, Type::kInt, 8, "offset_t"}},
      {"fi_fs", {Struct::kFileinfo, Member::kFiFs, Type::kString, 8, "string"}},
      {"fi_mount", {Struct::kFileinfo, Member::kFiMount, Type::kString, 8, "string"}},
  };
  return m;
}

const char* struct_name(Struct s) {
  switch (s) {
    case Struct::kPsinfo: return "psinfo_t";
    case Struct::kLwpsinfo: return "lwpsinfo_t";
    case Struct::kBufinfo: return "bufinfo_t";
    case Struct::kDevinfo: return "devinfo_t";
    case Struct::kFileinfo: return "fileinfo_t";
  }
  return "";
}

// Members of these structures that a recording cannot fill: named, so that
// the refusal says so rather than "no member".
bool known_unfilled(const std::string& m) {
  static const char* const kNames[] = {"pr_pri", "pr_nice", "pr_clname", "pr_flag", "pr_addr", "pr_wchan",
                                       "pr_stype", "pr_syscall", "pr_bindpro", "pr_bindpset", "pr_nlwp",
                                       "pr_uid", "pr_euid", "pr_gid", "pr_egid", "pr_size",
                                       "pr_rssize", "pr_start", "pr_time", "pr_dmodel", "pr_taskid",
                                       "pr_projid", "pr_zoneid", "pr_contract", "pr_pgid", "pr_sid",
                                       "b_addr", "b_resid", "b_iodone", "b_file", "b_offset"};
  for (const char* n : kNames)
    if (m == n) return true;
  return false;
}

std::string at(const ProbeSpec& p) {
  return (p.target ? std::string("pid$target") : p.provider) + ":" + p.module + ":" + p.function + ":" + p.name;
}

}  // namespace

Result<MemberInfo> find_member(const std::string& text, const ProbeSpec& probe) {
  const size_t arrow = text.find("->");
  const std::string base = text.substr(0, arrow), name = text.substr(arrow + 2);
  // What the base is at this probe.
  std::optional<Struct> is;
  MemberOf of = MemberOf::kCurrent;
  if (base == "curpsinfo" || base == "curlwpsinfo") {
    if (probe.provider == "dtrace" || probe.name == "BEGIN" || probe.name == "END" || probe.name == "ERROR" ||
        probe.name.rfind("tick-", 0) == 0)
      return Error(base + " is not available at " + at(probe) +
                   ": the probe fires outside the program's threads (use it at a probe that fires in one)");
    is = base == "curpsinfo" ? Struct::kPsinfo : Struct::kLwpsinfo;
  } else {
    of = MemberOf::kArgs;
    const bool wakeup = probe.provider == "sched" && probe.name == "wakeup";
    const bool io = probe.provider == "io" && (probe.name == "start" || probe.name == "done");
    if (wakeup && base == "args[0]") is = Struct::kLwpsinfo;
    else if (wakeup && base == "args[1]") is = Struct::kPsinfo;
    else if (io && base == "args[0]") is = Struct::kBufinfo;
    else if (io && base == "args[1]") is = Struct::kDevinfo;
    else if (io && base == "args[2]") is = Struct::kFileinfo;
    if (!is)
      return Error(base + "->" + name + " is not available at " + at(probe) +
                   ": callscope gives structured arguments at sched:::wakeup (args[0] lwpsinfo_t, args[1] "
                   "psinfo_t) and io:::start, io:::done (args[0] bufinfo_t, args[1] devinfo_t, args[2] "
                   "fileinfo_t), named in full");
  }
  auto it = members().find(name);
  if (it == members().end() || it->second.of != *is) {
    if (known_unfilled(name))
      return Error(base + "->" + name + " is not available: the recording does not hold it");
    return Error(std::string(struct_name(*is)) + " has no member " + name + " that callscope knows (" + base + "->" +
                 name + ")");
  }
  const Row& r = it->second;
  return MemberInfo{r.member, of, r.type, r.bytes, r.d_type};
}

Result<MemberInfo> find_member(const std::string& text, const std::vector<ProbeSpec>& probes) {
  // (A name is one member of one structure wherever it is valid: checking
  // each probe is enough.)
  std::optional<MemberInfo> info;
  for (const ProbeSpec& ps : probes) {
    CALLSCOPE_TRY(MemberInfo m, find_member(text, ps));
    info = m;
  }
  if (!info) return Error(text + " is read in a clause only");
  return *info;
}

std::optional<int64_t> d_constant(const std::string& name) {
  static const std::map<std::string, int64_t> m = {
      {"SSLEEP", kSsleep}, {"SRUN", kSrun},   {"SZOMB", 3},       {"SSTOP", 4},          {"SIDL", 5},
      {"SONPROC", kSonproc}, {"SWAIT", 7},    {"B_BUSY", 0x1},    {"B_DONE", kBufDone},  {"B_ERROR", kBufError},
      {"NULL", 0},         {"B_PAGEIO", 0x10},  {"B_PHYS", 0x20},  {"B_READ", kBufRead}, {"B_WRITE", kBufWrite},  {"B_ASYNC", 0x400},
  };
  auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

Value member_value(Member m, MemberOf of, const Firing& f) {
  const FiringArgs::Thread* woken = of == MemberOf::kArgs && f.structs ? &f.structs->woken : nullptr;
  const FiringArgs::Io* io = f.structs ? &f.structs->io : nullptr;
  static const FiringArgs::Io kNone{};
  if (!io) io = &kNone;
  auto sized = [](int64_t v, uint8_t bytes) { return Value::of_sized(v, bytes); };
  const char sname = woken ? 'S' : f.sname;  // sched:::wakeup fires before the woken thread runs
  switch (m) {
    case Member::kPrPid: return sized(woken ? woken->pid : f.pid, 4);
    case Member::kPrPpid: return sized(woken ? woken->ppid : f.ppid, 4);
    case Member::kPrFname: return Value::of_string(woken ? woken->fname : f.execname);
    case Member::kPrPsargs: return Value::of_string(woken ? woken->psargs : f.psargs);
    case Member::kPrLwpid: return sized(woken ? woken->tid : f.tid, 4);
    case Member::kPrState: return sized(sname == 'S' ? kSsleep : sname == 'R' ? kSrun : kSonproc, 4);
    case Member::kPrSname: return sized(sname, 1);
    case Member::kPrOnpro: return sized(woken ? -1 : f.cpu, 4);
    case Member::kBFlags: return sized(io->flags, 4);
    case Member::kBBcount: return Value::of_uint(io->bytes);
    case Member::kBBlkno: case Member::kBLblkno: return Value::of_uint(io->sector);
    case Member::kBError: return sized(io->error, 4);
    case Member::kBEdev: return Value::of_uint(io->dev);
    case Member::kDevMajor: return sized(static_cast<int64_t>(io->dev >> 20), 4);
    case Member::kDevMinor: case Member::kDevInstance: return sized(static_cast<int64_t>(io->dev & 0xfffff), 4);
    case Member::kDevName: case Member::kDevStatname: case Member::kDevPathname:
      return Value::of_string(io->dev_name);
    case Member::kFiOffset: return Value::of_int(-1);
    case Member::kFiName: case Member::kFiDirname: case Member::kFiPathname: case Member::kFiFs:
    case Member::kFiMount:
      return Value::of_string(io->unknown);
  }
  return Value::of_int(0);
}

}  // namespace callscope::query
