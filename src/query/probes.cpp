// The probe catalog: what each provider offers, and D's matching rules.
#include "query/probes.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <set>

#include "common/files.h"
#include "common/glob.h"
#include "common/output_format.h"
#include "analysis/off_cpu.h"
#include "format/trace_reader.h"
#include "query/lexer.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/symbolizer.h"

namespace callscope::query {
namespace {

bool has_glob(const std::string& s) { return s.find_first_of("*?[\\") != std::string::npos; }

// An empty field matches anything, as in D.
bool field_matches(const std::string& pattern, const std::string& text) {
  return pattern.empty() || glob_match(pattern, text);
}

// D's pid provider takes a module by its file name or a prefix of it that
// ends before a '.' ("libc", "libc.so" for "libc.so.6"), and "a.out" for
// the executable.
bool module_matches(const std::string& pattern, const std::string& name, bool main) {
  if (pattern.empty() || glob_match(pattern, name)) return true;
  if (main && glob_match(pattern, "a.out")) return true;
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
    if (glob_match(pattern, std::string_view(name).substr(0, dot))) return true;
  return false;
}

bool is_pid_provider(const std::string& p) { return p.rfind("pid", 0) == 0 || p.rfind("fpid", 0) == 0; }

// fpid is a synonym of pid: the probes are pid<PID>'s.
std::string pid_pattern(const std::string& provider) {
  return provider.rfind("fpid", 0) == 0 ? provider.substr(1) : provider;
}

bool all_hex(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

// The function symbols of one ELF file: .symtab, else .dynsym (a stripped
// file still has its exported functions there).
Result<std::vector<FunctionSymbol>> elf_functions(const std::string& path, uint64_t bias) {
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return system_error("cannot open " + path, errno);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    ::close(fd);
    return Error(path + ": not an ELF file");
  }
  std::vector<FunctionSymbol> out;
  for (Elf64_Word wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
    symbolize::for_each_elf_symbol(elf, wanted, [&](const GElf_Sym& sym, const char* name) {
      const int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) return true;
      if (!name || !*name) return true;
      FunctionSymbol f;
      f.mangled = name;
      // Versioned dynamic names ("memcpy@@GLIBC_2.14") are not in .dynsym's
      // strings; nothing to strip.
      f.name = symbolize::demangle(f.mangled);
      if (f.name == f.mangled) f.mangled.clear();
      f.addr = sym.st_value + bias;
      out.push_back(std::move(f));
      return true;
    });
    if (!out.empty()) break;
  }
  elf_end(elf);
  ::close(fd);
  return out;
}

}  // namespace

Catalog::Catalog(const CatalogInput& input) {
  add({0, ProbeKind::kBegin, "dtrace", "", "", "BEGIN"});
  add({0, ProbeKind::kEnd, "dtrace", "", "", "END"});
  add({0, ProbeKind::kError, "dtrace", "", "", "ERROR"});
  // The intervals dtrace -l lists; others are made when a script names them.
  for (const char* hz : {"97", "199", "499", "997", "1999", "4001", "4999"}) {
    Probe p{0, ProbeKind::kProfile, "profile", "", "", std::string("profile-") + hz};
    p.interval_ns = *clock_interval_ns(p.name, "profile-");
    add(std::move(p));
  }
  for (const char* hz : {"1", "10", "100", "500", "1000", "5000"}) {
    Probe p{0, ProbeKind::kTick, "profile", "", "", std::string("tick-") + hz};
    p.interval_ns = *clock_interval_ns(p.name, "tick-");
    add(std::move(p));
  }
  static const std::pair<ProcEvent, const char*> kProc[] = {
      {ProcEvent::kCreate, "create"},         {ProcEvent::kExecSuccess, "exec-success"},
      {ProcEvent::kExit, "exit"},             {ProcEvent::kLwpExit, "lwp-exit"},
      {ProcEvent::kLwpStart, "lwp-start"},    {ProcEvent::kStart, "start"},
      {ProcEvent::kModuleLoad, "module-load"}, {ProcEvent::kModuleUnload, "module-unload"},
      {ProcEvent::kLost, "lost"},             {ProcEvent::kExec, "exec"}};
  for (const auto& [ev, name] : kProc) {
    Probe p{0, ProbeKind::kProc, "proc", "", "", name};
    p.proc = ev;
    add(std::move(p));
  }
  // A failed exec is seen in the system calls alone.
  if (input.syscalls) {
    Probe p{0, ProbeKind::kProc, "proc", "", "", "exec-failure"};
    p.proc = ProcEvent::kExecFailure;
    add(std::move(p));
  } else {
    exec_failure_missing_ = true;
  }
  for (unsigned op = 1; op < 256; ++op) {
    const char* name = alloc_probe_name(static_cast<uint8_t>(op));
    if (!*name) continue;
    Probe p{0, ProbeKind::kAlloc, "alloc", "", "", name};
    p.op = static_cast<uint8_t>(op);
    add(std::move(p));
  }
  // Linux DTrace's names: module vmlinux; a system call's probes are
  // named by the call (this machine's table), sched's have no function.
  if (input.syscalls) {
    for (const auto& [nr, name] : analysis::syscall_table()) {
      for (const char* which : {"entry", "return"}) {
        Probe p{0, which[0] == 'e' ? ProbeKind::kSyscallEntry : ProbeKind::kSyscallReturn, "syscall", "vmlinux",
                name, which};
        p.syscall = nr;
        add(std::move(p));
      }
    }
  }
  if (input.sched) {
    for (int e = 0; e < kSchedEvents; ++e) {
      Probe p{0, ProbeKind::kSched, "sched", "vmlinux", "", sched_probe_name(static_cast<SchedEvent>(e))};
      p.sched = static_cast<SchedEvent>(e);
      add(std::move(p));
    }
  }
  if (input.faults) {
    // DTrace for Windows' name of a major fault too: hardflt.
    for (const auto& [kind, name] : {std::pair{FaultKind::kAny, "fault"}, std::pair{FaultKind::kMinor, "minor"},
                                     std::pair{FaultKind::kMajor, "major"}, std::pair{FaultKind::kMajor, "hardflt"}}) {
      Probe p{0, ProbeKind::kFault, "pf", "vmlinux", "", name};
      p.fault = kind;
      add(std::move(p));
    }
  }
  if (input.io) {
    for (const bool done : {false, true}) {
      Probe p{0, ProbeKind::kIo, "io", "vmlinux", "", done ? "done" : "start"};
      p.io_done = done;
      add(std::move(p));
    }
  }
  missing_ = input.missing;
  extend(input);
}

void live_kernel_providers(CatalogInput& in, uint32_t flags, const std::string& why) {
  in.syscalls = (flags & format::kInfoSyscalls) != 0;
  in.sched = (flags & format::kInfoEventGroups) && !(flags & format::kInfoNoSwitches);
  in.faults = (flags & format::kInfoFaults) != 0;
  in.io = (flags & format::kInfoIo) != 0;
  const std::pair<const char*, bool> providers[] = {
      {"syscall", in.syscalls}, {"sched", in.sched}, {"pf", in.faults}, {"io", in.io}};
  for (const auto& [provider, has] : providers) {
    if (has)
      in.missing.erase(provider);
    else
      in.missing[provider] = why;
  }
}

const char* sched_probe_name(SchedEvent e) {
  switch (e) {
    case SchedEvent::kOnCpu: return "on-cpu";
    case SchedEvent::kOffCpu: return "off-cpu";
    case SchedEvent::kSleep: return "sleep";
    case SchedEvent::kPreempt: return "preempt";
    case SchedEvent::kWakeup: return "wakeup";
  }
  return "";
}

const char* alloc_probe_name(uint8_t op) {
  using format::AllocOp;
  // D names: no brackets, no spaces (a description could not name them).
  switch (static_cast<AllocOp>(op)) {
    case AllocOp::kMalloc: return "malloc";
    case AllocOp::kCalloc: return "calloc";
    case AllocOp::kRealloc: return "realloc";
    case AllocOp::kReallocArray: return "reallocarray";
    case AllocOp::kPosixMemalign: return "posix_memalign";
    case AllocOp::kAlignedAlloc: return "aligned_alloc";
    case AllocOp::kMemalign: return "memalign";
    case AllocOp::kValloc: return "valloc";
    case AllocOp::kPvalloc: return "pvalloc";
    case AllocOp::kNew: return "new";
    case AllocOp::kNewArray: return "new-array";
    case AllocOp::kMmap: return "mmap";
    case AllocOp::kMremap: return "mremap";
    case AllocOp::kApi: return "pool-alloc";
    case AllocOp::kMoveFailed: return "move-failed";
    case AllocOp::kFree: return "free";
    case AllocOp::kReallocFree: return "realloc-free";
    case AllocOp::kDelete: return "delete";
    case AllocOp::kDeleteArray: return "delete-array";
    case AllocOp::kMunmap: return "munmap";
    case AllocOp::kMremapFree: return "mremap-free";
    case AllocOp::kApiFree: return "pool-free";
  }
  return "";
}

void Catalog::extend(const CatalogInput& input) {
  for (size_t pi = pids_.size(); pi < input.processes.size(); ++pi) pids_.push_back(input.processes[pi].pid);
  by_addr_.resize(pids_.size());
  aliases_.resize(pids_.size());
  unlisted_.resize(pids_.size());
  // Thousands of functions a library: room made once, not doubled (a
  // probe's move is four strings').
  size_t more = 0;
  for (const auto& proc : input.processes)
    for (const auto& m : proc.modules) more += m.functions.size();
  auto room = [](auto& v, size_t n) {
    if (v.capacity() < v.size() + n) v.reserve(std::max(v.size() + n, 2 * v.capacity()));
  };
  room(functions_, more);
  room(probes_, 2 * more);
  for (uint32_t pi = 0; pi < input.processes.size(); ++pi) {
    const auto& proc = input.processes[pi];
    for (const auto& m : proc.modules) {
      if (m.functions.empty()) unlisted_[pi].emplace_back(m.name, m.main);
      // One probe per name: a second symbol of the same name (a static
      // function of another file, an alias) shares it.
      std::unordered_map<std::string, uint32_t> by_name;
      for (const FunctionSymbol& f : m.functions) {
        auto [it, fresh] = by_name.try_emplace(f.name, 0);
        if (fresh) {
          it->second = add_function(pi, f.addr, m.name, f.name, m.main);
          functions_[it->second].mangled = f.mangled;
        } else if (auto [at, fresh_addr] = by_addr_[pi].try_emplace(f.addr, it->second);
                   !fresh_addr && at->second != it->second) {
          aliases_[pi][f.addr].push_back(it->second);
        }
      }
    }
  }
}

uint32_t Catalog::add(Probe p) {
  p.id = static_cast<uint32_t>(probes_.size() + 1);
  probes_.push_back(std::move(p));
  return probes_.back().id;
}

uint32_t Catalog::add_function(uint32_t process, uint64_t addr, const std::string& module, const std::string& name,
                               bool main_module) {
  const auto index = static_cast<uint32_t>(functions_.size());
  PidFunction f;
  f.process = process;
  f.module = module;
  f.name = name;
  f.main_module = main_module;
  const std::string provider = "pid" + std::to_string(pids_[process]);
  for (ProbeKind k : {ProbeKind::kEntry, ProbeKind::kReturn}) {
    Probe p{0, k, provider, module, name, k == ProbeKind::kEntry ? "entry" : "return"};
    p.process = process;
    p.function_index = index;
    (k == ProbeKind::kEntry ? f.entry_probe : f.return_probe) = add(std::move(p));
  }
  functions_.push_back(std::move(f));
  if (auto [it, fresh] = by_addr_[process].try_emplace(addr, index); !fresh) aliases_[process][addr].push_back(index);
  return index;
}

std::optional<uint32_t> Catalog::function_at(uint32_t process, uint64_t addr, std::string_view prefer) const {
  if (process >= by_addr_.size()) return std::nullopt;
  auto it = by_addr_[process].find(addr);
  if (it == by_addr_[process].end()) return std::nullopt;
  if (!prefer.empty() && functions_[it->second].name != prefer)
    if (auto a = aliases_[process].find(addr); a != aliases_[process].end())
      for (uint32_t other : a->second)
        if (functions_[other].name == prefer) return other;
  return it->second;
}

bool Catalog::has_aliases(uint32_t process, uint64_t addr) const {
  return process < aliases_.size() && aliases_[process].count(addr) > 0;
}

bool Catalog::matches(const ProbeSpec& spec, uint32_t id) const {
  const Probe& p = probe(id);
  if (p.kind == ProbeKind::kEntry || p.kind == ProbeKind::kReturn) {
    const PidFunction& f = functions_[p.function_index];
    return field_matches(pid_pattern(spec.provider), p.provider) && module_matches(spec.module, f.module, f.main_module) &&
           (field_matches(spec.function, f.name) || (!f.mangled.empty() && glob_match(spec.function, f.mangled))) &&
           field_matches(spec.name, p.name);
  }
  return field_matches(spec.provider, p.provider) && field_matches(spec.module, p.module) &&
         field_matches(spec.function, p.function) && field_matches(spec.name, p.name);
}

Result<std::vector<uint32_t>> Catalog::match(const ProbeSpec& spec) {
  if (is_pid_provider(spec.provider) && all_hex(spec.name))
    return Error("probe description " + spec.provider + ":" + spec.module + ":" + spec.function + ":" + spec.name +
                 ": offset probes are not supported: callscope sees function entry and return only");
  // A provider of the kernel's events the trace does not hold: an empty
  // answer would look like "none happened".
  if (auto why = missing_.find(spec.provider); why != missing_.end())
    return Error("probe description " + spec.provider + ":" + spec.module + ":" + spec.function + ":" + spec.name +
                 ": " + why->second);
  if (exec_failure_missing_ && spec.provider == "proc" && spec.name == "exec-failure")
    return Error("probe description " + spec.provider + ":" + spec.module + ":" + spec.function + ":" + spec.name +
                 ": a failed exec is seen in the system calls: record the program with --events sched,syscalls");
  // Linux's page-fault events say major or minor, not why.
  static const char* const kWindowsFaults[] = {"trans_flt", "dzero_flt", "cow_flt", "gp_flt", "hp_flt", "av_flt"};
  if (spec.provider == "pf")
    for (const char* n : kWindowsFaults)
      if (spec.name == n)
        return Error("probe description " + spec.provider + ":" + spec.module + ":" + spec.function + ":" + spec.name +
                     ": Linux's page-fault events say whether a fault was major or minor, not its kind: use "
                     "pf:::minor, pf:::major (or hardflt) or pf:::fault");
  // profile's probes are made on demand: tick-N and profile-N for any N.
  if (!has_glob(spec.name) && field_matches(spec.provider, "profile") && field_matches(spec.module, "") &&
      field_matches(spec.function, "")) {
    for (const auto& [prefix, kind] : {std::pair{"tick-", ProbeKind::kTick}, std::pair{"profile-", ProbeKind::kProfile}}) {
      auto ns = clock_interval_ns(spec.name, prefix);
      if (!ns) continue;
      bool known = false;
      for (const Probe& p : probes_) known = known || (p.kind == kind && p.name == spec.name);
      if (!known) {
        Probe p{0, kind, "profile", "", "", spec.name};
        p.interval_ns = *ns;
        add(std::move(p));
      }
    }
  }
  std::vector<uint32_t> ids;
  for (const Probe& p : probes_)
    if (matches(spec, p.id)) ids.push_back(p.id);
  return ids;
}

bool Catalog::may_match_later(const ProbeSpec& spec) const {
  // Only a module named outright: "any module" would always find one
  // without symbols (the vdso) and no description would ever be refused.
  if (spec.module.empty() || has_glob(spec.module)) return false;
  if (!is_pid_provider(spec.provider) && !spec.provider.empty()) return false;
  if (!field_matches(spec.name, "entry") && !field_matches(spec.name, "return")) return false;
  for (size_t pi = 0; pi < unlisted_.size(); ++pi) {
    if (!field_matches(pid_pattern(spec.provider), "pid" + std::to_string(pids_[pi]))) continue;
    for (const auto& [name, main] : unlisted_[pi])
      if (module_matches(spec.module, name, main)) return true;
  }
  return false;
}

std::optional<uint64_t> clock_interval_ns(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  size_t i = prefix.size();
  const size_t digits = i;
  uint64_t n = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') {
    if (n > (~uint64_t{0} - 9) / 10) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(name[i++] - '0');
  }
  if (i == digits || n == 0) return std::nullopt;
  const std::string unit = name.substr(i);
  // profile.c's suffixes; none means hz.
  static const std::pair<const char*, uint64_t> kUnits[] = {
      {"ns", 1},           {"nsec", 1},           {"us", 1000},           {"usec", 1000},
      {"ms", 1000000},     {"msec", 1000000},     {"s", 1000000000},      {"sec", 1000000000},
      {"m", 60000000000},  {"min", 60000000000},  {"h", 3600000000000},   {"hour", 3600000000000},
      {"d", 86400000000000}, {"day", 86400000000000}};
  uint64_t ns = 0;
  if (unit.empty() || unit == "hz") {
    ns = 1000000000 / n;
  } else {
    bool found = false;
    for (const auto& [u, scale] : kUnits) {
      if (unit != u) continue;
      if (n > ~uint64_t{0} / scale) return std::nullopt;
      ns = n * scale;
      found = true;
    }
    if (!found) return std::nullopt;
  }
  // dtrace's profile provider makes no probe below 200 us.
  if (ns < 200000) return std::nullopt;
  return ns;
}

namespace {
// Where the letters of a macro's name that begins at `from` end.
size_t name_end(const std::string& f, size_t from) {
  while (from < f.size() && std::isalpha(static_cast<unsigned char>(f[from]))) ++from;
  return from;
}
}  // namespace

Result<ProbeSpec> parse_probe_description(const std::string& text, const CompileOptions& options) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    // "\:" is a colon inside a field (ns\:\:f): the glob reads it as ':'.
    size_t colon = text.find(':', start);
    while (colon != std::string::npos && colon > 0 && text[colon - 1] == '\\') colon = text.find(':', colon + 1);
    fields.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (fields.size() > 4) return Error("invalid probe description \"" + text + "\": too many ':' (at most 3)");
  for (std::string& f : fields) {
    std::string out;
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i] != '$') {
        out += f[i];
        continue;
      }
      if (f.compare(i, 7, "$target") == 0) {
        if (!options.target)
          return Error("invalid probe description \"" + text + "\": $target is not set (no trace to take it from)");
        out += std::to_string(*options.target);
        i += 6;
      } else if (const size_t e = name_end(f, i + 1); process_macro(std::string_view(f).substr(i + 1, e - i - 1))) {
        out += std::to_string(*process_macro(std::string_view(f).substr(i + 1, e - i - 1)));  // $pid, ...
        i = e - 1;
      } else if (i + 1 < f.size() && f[i + 1] >= '1' && f[i + 1] <= '9') {
        const size_t n = static_cast<size_t>(f[i + 1] - '0');
        if (n > options.macro_args.size())
          return Error("invalid probe description \"" + text + "\": macro argument $" + std::to_string(n) +
                       " is not defined");
        out += options.macro_args[n - 1];
        ++i;
      } else {
        return Error("invalid probe description \"" + text + "\": unknown macro at '" + f.substr(i) + "'");
      }
    }
    f = out;
  }
  ProbeSpec s;
  std::string* slots[4] = {&s.provider, &s.module, &s.function, &s.name};
  const size_t skip = 4 - fields.size();
  for (size_t i = 0; i < fields.size(); ++i) *slots[skip + i] = fields[i];
  s.text = text;
  return s;
}

std::string no_match_message(const ProbeSpec& spec) {
  return "probe description " + spec.provider + ":" + spec.module + ":" + spec.function + ":" + spec.name +
         " does not match any probes";
}

CatalogInput catalog_input(format::TraceReader& trace, std::vector<std::string>& warnings, size_t first_module) {
  CatalogInput in;
  in.syscalls = first_module == 0 && trace.has_event_group(format::kInfoSyscalls);
  in.sched = first_module == 0 && trace.has_switches();
  in.faults = first_module == 0 && trace.has_event_group(format::kInfoFaults);
  in.io = first_module == 0 && trace.has_event_group(format::kInfoIo);
  if (!in.syscalls)
    in.missing["syscall"] = "the trace has no system calls: record the program with --events syscalls (or "
                            "--events sched,syscalls)";
  if (!in.sched)
    in.missing["sched"] = "the trace has no context switches: record the program with --events sched (the default; "
                          "the kernel may have refused them: record said so)";
  if (!in.faults) in.missing["pf"] = "the trace has no page faults: record the program with --events sched,faults";
  if (!in.io) in.missing["io"] = "the trace has no block I/O: record the program with --events sched,io (as root)";
  in.processes.resize(trace.processes().size());
  for (size_t i = 0; i < trace.processes().size(); ++i) in.processes[i].pid = trace.processes()[i].record.pid;
  std::vector<std::set<std::string>> seen(in.processes.size());
  const auto& modules = trace.modules();
  for (size_t mi = 0; mi < modules.size(); ++mi) {
    const format::ModuleInfo& m = modules[mi];
    const uint32_t pi = m.record.process_index;
    if (pi >= in.processes.size() || !seen[pi].insert(m.path).second) continue;  // a library loaded again
    if (mi < first_module) continue;  // listed before
    CatalogInput::Module mod;
    mod.name = base_name(m.path);
    const std::string& exe = trace.processes()[pi].exe;
    mod.main = m.path == exe || (!exe.empty() && base_name(exe) == mod.name);
    if (::access(m.path.c_str(), R_OK) == 0) {
      auto fns = elf_functions(m.path, m.record.load_bias);
      if (fns) mod.functions = std::move(*fns);
      else warnings.push_back("no function symbols for " + m.path + ": " + fns.error().message());
    }
    // A file that is gone: the symbolizer says so; its functions get
    // probes as they are called.
    in.processes[pi].modules.push_back(std::move(mod));
  }
  return in;
}

std::string list_header() {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%5s %10s %17s %33s %s\n", "ID", "PROVIDER", "MODULE", "FUNCTION", "NAME");
  return buf;
}

std::string list_line(const Probe& p) {
  const std::string head = [&] {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%5u %10s ", p.id, p.provider.c_str());
    return std::string(buf);
  }();
  // Names can be longer than the columns: printed whole, as dtrace does.
  // They come from symbol tables and file names: terminal-safe, as every
  // text view prints them.
  auto pad = [](const std::string& raw, size_t w) {
    const std::string s = terminal_safe(raw);
    return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
  };
  return head + pad(p.module, 17) + " " + pad(p.function, 33) + " " + terminal_safe(p.name) + "\n";
}

}  // namespace callscope::query
