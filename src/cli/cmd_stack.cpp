// `callscope stack`: frame sizes and worst-case stack depth of an ELF file,
// from its CFI, prologues and static call graph. Option parsing only; the
// work is in src/stack.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/options.h"
#include "common/files.h"
#include "stack/report.h"
#include "stack/stack.h"

namespace callscope::cli {
namespace {

struct StackOptions {
  std::string binary;
  std::vector<std::string> patterns;
  size_t top = 0;
  std::string format = "text";
  bool worst = false;
  bool unresolved = false;
  std::string edges_file;
  std::string limit;
};

// Exit status of --limit when a bound is over its limit or is not a bound:
// apart from 1 (an error) and 2 (a usage error), so that CI can tell them.
constexpr int kOverLimit = 3;

Result<int> run_stack(const StackOptions& o) {
  using namespace callscope::stack;
  CALLSCOPE_TRY(OutputFormat format, parse_output_format(o.format));
  std::vector<StackLimit> limits;
  if (!o.limit.empty()) {
    CALLSCOPE_TRY(limits, parse_limits(o.limit));
  }
  if (o.unresolved && (o.worst || !limits.empty())) {
    return Error("--unresolved lists call sites; it does not combine with --worst or --limit");
  }
  AnalyzeOptions options;
  options.site_details = o.unresolved;
  CALLSCOPE_TRY(StackModel model, analyze_binary(o.binary, options));
  if (!model.cfi_problem.empty()) {
    std::fprintf(stderr, "callscope stack: warning: %s: %s; the functions it hides are read from their prologue\n",
                 terminal_safe(o.binary).c_str(), terminal_safe(model.cfi_problem).c_str());
  }
  if (!o.edges_file.empty()) {
    auto bytes = read_file_bytes(o.edges_file);
    if (!bytes) return bytes.error().context("cannot read edges file '" + o.edges_file + "'");
    const std::string text(bytes->begin(), bytes->end());
    CALLSCOPE_TRY(std::vector<UserEdge> edges, parse_user_edges(text, o.edges_file));
    Status st = apply_user_edges(model, edges);
    if (!st) return st.error().context("edges file '" + o.edges_file + "'");
  }
  std::vector<FunctionPattern> patterns;
  for (const std::string& p : o.patterns) patterns.push_back(parse_pattern(p));
  std::vector<uint32_t> selected = select_functions(model, patterns);
  if (!patterns.empty() && selected.empty()) {
    return Error("no function of '" + o.binary + "' matches the patterns given");
  }
  std::string text;
  int status = 0;
  if (o.unresolved) {
    if (!patterns.empty()) {
      std::vector<bool> keep(model.functions.size(), false);
      for (uint32_t i : selected) keep[i] = true;
      std::erase_if(model.indirect_sites, [&](const IndirectSite& s) { return !keep[s.function]; });
    }
    text = render_unresolved(model, format);
  } else if (o.worst || !limits.empty()) {
    CALLSCOPE_TRY(std::vector<uint32_t> named, limited_entries(model, limits));
    if (!named.empty() && patterns.empty()) {
      selected = std::move(named);  // --limit main=8K checks main
    } else if (patterns.empty()) {
      std::vector<uint32_t> entries = default_entries(model);
      if (!entries.empty()) selected = std::move(entries);
    }
    const WorstCase worst = compute_worst_case(model);
    const std::vector<LimitVerdict> verdicts = check_limits(model, worst, selected, limits);
    std::vector<uint32_t> shown = selected;
    size_t top = o.top;
    if (!limits.empty()) top = 0;  // a gate shows every entry it checked
    text = render_worst(model, worst, shown, top, format, verdicts, stdout);
    size_t over = 0;
    std::string names;
    for (const LimitVerdict& v : verdicts) {
      if (v.ok) continue;
      ++over;
      if (over <= 5) names += (names.empty() ? "" : ", ") + model.functions[v.entry].name;
    }
    if (over > 0) {
      status = kOverLimit;
      std::fprintf(stderr, "callscope stack: %zu entry point%s over the limit or without a bound: %s%s\n",
                   over, over == 1 ? "" : "s", terminal_safe(names).c_str(), over > 5 ? ", ..." : "");
    }
  } else {
    text = render_frames(model, selected, o.top, format);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return status;
}

}  // namespace

Command stack_command() {
  return {"stack", "Stack frame sizes and worst-case stack depth of an executable or library",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<StackOptions>();
            app.add_option("binary", o->binary,
                           "ELF executable, shared library, object file (.o, .ko) or archive (.a) for "
                           "x86-64; executable or firmware image for AArch64 or Cortex-M (Thumb-2)")
                ->required();
            app.add_option("patterns", o->patterns,
                           "Globs on demangled names, optionally module-qualified "
                           "('libfoo.so!ns::*'); with --worst they choose the entry points");
            app.add_option("-n,--top", o->top, "Show at most N functions (0: all)")->type_name("N")->check(count_check());
            app.add_option("--format", o->format, "Output format: text, csv or json");
            app.add_flag("--worst", o->worst,
                         "Worst-case stack depth from each entry point (default: main, every thread start "
                         "routine found, a kernel module's init/cleanup and ops-table functions, a "
                         "firmware's vector-table handlers; all functions when there are none)");
            app.add_option("--edges", o->edges_file,
                           "File of 'caller -> callee' lines closing indirect calls (names or globs)");
            app.add_flag("--unresolved", o->unresolved,
                         "List every call and tail jump through a pointer (function, site, "
                         "instruction, file:line) as 'caller -> ?' lines to complete into an edges file");
            app.add_option("--limit", o->limit,
                           "Gate for CI (implies --worst): BYTES for every entry point, or "
                           "NAME=BYTES,... (8K, 64K, 1M); exits 3 when a worst case is over its limit "
                           "or is not a bound (recursion, dynamic frame, unresolved indirect call)")
                ->type_name("LIMITS");
            app.footer(
                "Frame bytes include the return address (on x86-64), the registers the prologue\n"
                "pushes and the stack arguments pushed for a call, as gcc -fstack-usage counts them; 'dynamic'\n"
                "frames (alloca, VLA) show their static part. A worst-case figure is the sum of the\n"
                "frames along the deepest static call path (a tail call replaces its caller's\n"
                "frame; a recursion counts each of its functions once and is flagged 'unbounded');\n"
                "it excludes stack used inside other modules and below unresolved indirect calls\n"
                "and jumps, which are flagged. Exit status: 0, 1 error, 2 usage, 3 over --limit.");
            return [o] { return run_stack(*o); };
          }};
}

}  // namespace callscope::cli
