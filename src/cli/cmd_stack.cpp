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
  std::string edges_file;
};

Result<int> run_stack(const StackOptions& o) {
  using namespace callscope::stack;
  CALLSCOPE_TRY(OutputFormat format, parse_output_format(o.format));
  CALLSCOPE_TRY(StackModel model, analyze_binary(o.binary));
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
  if (o.worst) {
    if (patterns.empty()) {
      std::vector<uint32_t> entries = default_entries(model);
      if (!entries.empty()) selected = std::move(entries);
    }
    const WorstCase worst = compute_worst_case(model);
    text = render_worst(model, worst, selected, o.top, format);
  } else {
    text = render_frames(model, selected, o.top, format);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

Command stack_command() {
  return {"stack", "Stack frame sizes and worst-case stack depth of an executable or library",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<StackOptions>();
            app.add_option("binary", o->binary, "ELF executable or shared library (x86-64)")
                ->required();
            app.add_option("patterns", o->patterns,
                           "Globs on demangled names, optionally module-qualified "
                           "('libfoo.so!ns::*'); with --worst they choose the entry points");
            app.add_option("-n,--top", o->top, "Show at most N functions (0: all)")->type_name("N")->check(count_check());
            app.add_option("--format", o->format, "Output format: text, csv or json");
            app.add_flag("--worst", o->worst,
                         "Worst-case stack depth from each entry point (default: main and every "
                         "thread start routine found; all functions when there are none)");
            app.add_option("--edges", o->edges_file,
                           "File of 'caller -> callee' lines closing indirect calls");
            app.footer(
                "Frame bytes include the return address and the registers the prologue pushes,\n"
                "as gcc -fstack-usage counts them; 'dynamic' frames (alloca, VLA) show their static\n"
                "part. A worst-case figure is the sum of the frames along the deepest static call\n"
                "path (a tail call replaces its caller's frame); it excludes stack used inside\n"
                "other modules and below unresolved indirect calls, which are flagged.");
            return [o] { return run_stack(*o); };
          }};
}

}  // namespace callscope::cli
