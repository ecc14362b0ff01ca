#include "cli/view_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cli/command.h"
#include "cli/options.h"
#include "common/glob.h"
#include "format/trace_format.h"
#include "views/format_util.h"
#include "views/replay_view.h"

namespace callscope::cli {

void add_view_filters(CLI::App& app, ViewFilters& f) {
  app.add_option("-F,--function", f.function_globs,
                 "Only the call paths through functions whose name matches GLOB (repeatable: any of them)")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  app.add_option("-m,--module", f.module_globs,
                 "Only the call paths through functions of modules whose file name matches GLOB (repeatable)")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  app.add_option("-t,--thread", f.threads,
                 "Only this thread: its # in 'callscope info', or a glob on thread names (repeatable)")
      ->type_name("N|GLOB")
      ->allow_extra_args(false);
  app.add_option("--from", f.from, "Only what happened from this time since the trace start on (1.5ms, 2s)")
      ->type_name("TIME")
      ->check(duration_check());
  app.add_option("--to", f.to, "Only what happened up to this time since the trace start")
      ->type_name("TIME")
      ->check(duration_check());
  app.add_option("--dump", f.dump,
                 "Profile mode: snapshot K (1, 2, ...; 'callscope info' lists them) instead of the final state")
      ->type_name("K")
      ->check(snapshot_check());
  app.add_flag("--no-demangle", f.no_demangle, "Show C++ names as the linker sees them");
}

analysis::Resolver symbol_resolver(symbolize::Symbolizer& sym) {
  return [&sym](uint32_t process, uint64_t addr, uint64_t tick) {
    const symbolize::Symbol& s = tick == analysis::kNoTick ? sym.lookup(process, addr) : sym.lookup(process, addr, tick);
    return analysis::FunctionInfo{s.display(), s.module, s.file, s.line > 0 ? static_cast<uint32_t>(s.line) : 0};
  };
}

Result<std::vector<uint32_t>> pick_dumps(const format::TraceReader& t, uint32_t k) {
  if (!t.is_profile()) {
    if (k) return Error("--dump needs a profile-mode trace ('callscope record --mode=profile'); '" + t.path() +
                        "' holds every call, not snapshots");
    return std::vector<uint32_t>{};
  }
  if (k == 0) return analysis::final_dumps(t);
  if (const auto index = analysis::snapshot_index(t, k)) return std::vector<uint32_t>{*index};
  std::vector<uint32_t> numbers = analysis::snapshot_numbers(t);
  std::sort(numbers.begin(), numbers.end());
  std::string have;
  for (size_t i = 0; i < numbers.size(); ++i) {
    // Runs of consecutive numbers as "1 to 4".
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    have += (have.empty() ? "" : ", ") + std::to_string(numbers[i]) +
            (j > i ? (j == i + 1 ? ", " : " to ") + std::to_string(numbers[j]) : "");
    i = j;
  }
  return Error("no snapshot " + std::to_string(k) + " in '" + t.path() + "': it has " +
               std::to_string(numbers.size()) + " (" + have + "; 'callscope info' lists them)");
}

Error nothing_wanted(const ViewFilters& f) {
  if (f.module_globs.empty()) return Error("no function matches " + quoted_list(f.function_globs));
  if (f.function_globs.empty()) return Error("no module matches " + quoted_list(f.module_globs));
  return Error("no function matches " + quoted_list(f.function_globs) + " in a module matching " +
               quoted_list(f.module_globs));
}

Result<ViewInput> open_view(const std::string& path, const ViewFilters& f) {
  ViewInput in;
  CALLSCOPE_TRY(in.trace, format::TraceReader::open(path));
  format::TraceReader& t = *in.trace;
  const bool windowed = !f.from.empty() || !f.to.empty();
  if (windowed && t.is_profile())
    return Error("--from/--to need a trace of every call: '" + path +
                 "' holds call trees of profile mode (snapshots; --dump K picks one)");
  if (f.dump && !t.is_profile()) CALLSCOPE_CHECK(pick_dumps(t, f.dump));
  if (windowed) {
    const double per_ns = t.header().ticks_per_ns;
    // In ticks, no further than the largest tick (a huge --to is "the end").
    auto ticks = [&](const std::string& text) {
      const double v = static_cast<double>(*views::parse_duration_ns(text)) * per_ns;
      return v >= 1.8e19 ? analysis::TickWindow{}.to : static_cast<uint64_t>(v);
    };
    if (!f.from.empty()) in.window.from = ticks(f.from);
    if (!f.to.empty()) in.window.to = ticks(f.to);
    if (in.window.from > in.window.to) return Error("--from " + f.from + " is after --to " + f.to);
  }
  CALLSCOPE_TRY(in.threads, analysis::select_threads(t, f.threads));
  in.sym = std::make_unique<symbolize::Symbolizer>(t, symbolize::SymbolizerOptions{!f.no_demangle});
  in.resolve = symbol_resolver(*in.sym);
  if (!f.function_globs.empty() || !f.module_globs.empty()) {
    in.wanted = [fg = f.function_globs, mg = f.module_globs](const analysis::FunctionInfo& fn) {
      return (fg.empty() || glob_match_any(fg, fn.name)) && (mg.empty() || glob_match_any(mg, fn.module));
    };
  }
  return in;
}

std::function<bool(uint64_t)> wanted_functions(const ViewInput& in, const analysis::Profile& p) {
  if (!in.wanted) return nullptr;
  return [&in, &p](uint64_t fn) { return in.wanted(p.functions[fn]); };
}

// An error when -F/-m were given and match no function of `p`.
static Status some_wanted(const ViewInput& in, const analysis::Profile& p, const ViewFilters& f) {
  if (!in.wanted) return ok_status();
  for (const analysis::FunctionInfo& fn : p.functions)
    if (in.wanted(fn)) return ok_status();
  return nothing_wanted(f);
}

Result<analysis::Profile> load_view_profile(ViewInput& in, const ViewFilters& f) {
  format::TraceReader& t = *in.trace;
  analysis::Profile p;
  if (t.is_profile()) {
    CALLSCOPE_TRY(std::vector<uint32_t> dumps, pick_dumps(t, f.dump));
    CALLSCOPE_TRY(p, analysis::build_profile_from_dumps(t, dumps, in.threads, in.resolve));
  } else {
    CALLSCOPE_TRY(p, analysis::build_profile(t, in.threads, in.resolve, in.window));
  }
  CALLSCOPE_CHECK(some_wanted(in, p, f));
  return p;
}

Status kernel_view_possible(const format::TraceReader& t, const std::string& flag) {
  if (t.is_profile())
    return Error(flag + " needs a recording: a profile-mode trace holds call trees, not calls in time, so the kernel's "
                        "events it has cannot be put under call paths ('callscope info' gives each thread's); record "
                        "without --mode profile");
  return ok_status();
}

Status wait_view_possible(const format::TraceReader& t) {
  CALLSCOPE_CHECK(kernel_view_possible(t, "--wait"));
  if (!t.has_switches())
    return Error("this trace has no context switches: it was recorded with --events none or without sched, by an older callscope, or "
                 "where the kernel refused them (record printed why); record again to see where the threads waited");
  return ok_status();
}

Result<analysis::Profile> load_wait_profile(ViewInput& in, const ViewFilters& f) {
  format::TraceReader& t = *in.trace;
  CALLSCOPE_CHECK(wait_view_possible(t));
  if (!f.from.empty() || !f.to.empty()) return Error("--wait does not take --from/--to: it shows the whole recording");
  CALLSCOPE_TRY(analysis::Profile p, analysis::build_wait_profile(t, in.threads, in.resolve));
  CALLSCOPE_CHECK(some_wanted(in, p, f));
  return p;
}

Result<analysis::Profile> load_sample_profile(ViewInput& in, const ViewFilters& f) {
  format::TraceReader& t = *in.trace;
  CALLSCOPE_CHECK(kernel_view_possible(t, "--samples"));
  if (!f.from.empty() || !f.to.empty()) return Error("--samples does not take --from/--to: it shows the whole recording");
  CALLSCOPE_TRY(analysis::Profile p, analysis::build_sample_profile(t, in.threads, in.resolve));
  CALLSCOPE_CHECK(events_present(p, "CPU samples", "--sample HZ (e.g. --sample 999) to see where they ran"));
  CALLSCOPE_CHECK(some_wanted(in, p, f));
  return p;
}

Status events_present(const analysis::Profile& p, const std::string& what, const std::string& record_with) {
  if (std::none_of(p.threads.begin(), p.threads.end(), [](const analysis::ThreadProfile& tp) { return tp.tree.size() > 1; }))
    return Error("this trace has no " + what + " of these threads: record with " + record_with);
  return ok_status();
}

Result<DiffSide> open_diff_side(const std::string& spec, const std::string& trace, ViewFilters f) {
  const bool snapshot =
      !spec.empty() && spec.size() < 10 && spec.find_first_not_of("0123456789") == std::string::npos;
  std::string path = spec;
  f.dump = 0;
  if (snapshot) {
    if (trace.empty()) return Error("--diff " + spec + ": a snapshot number needs the trace that holds it (give TRACE too)");
    f.dump = static_cast<uint32_t>(std::stoul(spec));
    if (f.dump == 0) return Error("--diff: snapshots are numbered from 1");
    path = trace;
  }
  DiffSide side;
  CALLSCOPE_TRY(side.in, open_view(path, f));
  const format::TraceReader& t = *side.in.trace;
  if (snapshot && !t.is_profile())
    return Error("--diff " + spec + ": '" + path + "' holds every call, not snapshots; compare two traces instead");
  CALLSCOPE_TRY(side.profile, load_view_profile(side.in, f));
  if (snapshot) {
    char when[64];
    std::snprintf(when, sizeof when, "%.6f s", t.ticks_to_ns(t.dumps()[*analysis::snapshot_index(t, f.dump)].tick) / 1e9);
    side.label = path + " snapshot " + spec + " (at " + when + ")";
  } else {
    side.label = path + (t.is_profile() ? " (final state)" : "");
  }
  return side;
}

Result<std::optional<analysis::MemoryModel>> memory_model(format::TraceReader& t) {
  bool more = false;  // losses and stops count too: the model decides
  for (const format::ThreadInfo& th : t.threads()) more = more || th.record.events > 2 * th.record.calls + 8;
  if (t.is_profile() || !more) return std::optional<analysis::MemoryModel>();
  CALLSCOPE_TRY(analysis::MemoryModel m, analysis::build_memory_model(t));
  if (!m.has_memory_events) return std::optional<analysis::MemoryModel>();
  return std::optional<analysis::MemoryModel>(std::move(m));
}

int finish_view(const char* command, const ViewInput& in) {
  for (const std::string& w : in.sym->warnings()) print_warning(command, w);
  if (const std::string w = views::loss_warning(*in.trace); !w.empty()) print_warning(command, w);
  if (const std::string w = views::unwound_warning(*in.trace); !w.empty()) print_warning(command, w);
  for (const std::string& p : in.trace->problems())
    std::fprintf(stderr, "callscope %s: damaged trace: %s\n", command, terminal_safe(p).c_str());
  return in.trace->problems().empty() ? 0 : 1;
}

Result<std::unique_ptr<OutputFile>> OutputFile::open(const std::string& path, bool binary) {
  std::unique_ptr<OutputFile> o(new OutputFile);
  o->path_ = path;
  if (path.empty() || path == "-") {
    if (binary && isatty(STDOUT_FILENO))
      return Error("this format is binary: give a file with -o FILE, or redirect the output");
    o->f_ = stdout;
    return o;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Error("'" + path + "' is a directory: -o takes a file name");
    if (!S_ISREG(st.st_mode)) {
      // A device or a pipe (-o /dev/null, a FIFO): written in place; a
      // temporary file renamed over it would replace the device.
      o->f_ = std::fopen(path.c_str(), "wb");
      if (!o->f_) return Error("cannot write '" + path + "': " + views::describe_errno(errno));
      o->in_place_ = true;
      return o;
    }
    if (S_ISREG(st.st_mode)) {
      char magic[8] = {};
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      const bool trace = fd >= 0 && ::read(fd, magic, sizeof magic) == sizeof magic &&
                         std::memcmp(magic, format::kTraceMagic, sizeof magic) == 0;
      if (fd >= 0) ::close(fd);
      if (trace) return Error("'" + path + "' is a callscope trace: not overwritten (give another -o FILE)");
    }
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string tmp = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + "." +
                    path.substr(slash == std::string::npos ? 0 : slash + 1) + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Error("cannot write in '" + dir + "': " + views::describe_errno(errno));
  ::fchmod(fd, 0644 & ~[] { const mode_t m = ::umask(0); ::umask(m); return m; }());
  o->tmp_ = tmp;
  o->f_ = ::fdopen(fd, "wb");
  if (!o->f_) {
    ::close(fd);
    ::unlink(tmp.c_str());
    o->tmp_.clear();
    return Error("cannot write '" + path + "'");
  }
  return o;
}

OutputFile::~OutputFile() {
  if (f_ && f_ != stdout) std::fclose(f_);
  if (!tmp_.empty() && !committed_) ::unlink(tmp_.c_str());
}

Status OutputFile::commit() {
  if (f_ == stdout) {
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
      return Error("cannot write to standard output: " + views::describe_errno(errno ? errno : EIO));
    return ok_status();
  }
  const bool failed = std::ferror(f_) != 0;
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (failed || rc != 0) return Error("cannot write '" + path_ + "': " + views::describe_errno(errno ? errno : EIO));
  if (in_place_) return ok_status();
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    return Error("cannot write '" + path_ + "': " + views::describe_errno(errno));
  committed_ = true;
  return ok_status();
}

}  // namespace callscope::cli
