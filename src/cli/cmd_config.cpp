// `callscope config`: every setting with its effective value and where it
// came from (a flag, a CALLSCOPE_* variable, the TOML file and its line, or
// the default), and the variables a traced program would get. It takes the
// same flags as `record` (and report's --name-width), so precedence can be
// checked without running anything.
#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/config.h"
#include "common/output_format.h"

namespace callscope::cli {
namespace {

namespace cfg = callscope::config;
using json = nlohmann::ordered_json;

struct Opts {
  std::string format = "text";
};

// The value in its JSON type: durations in whole ns, lists as arrays.
json json_value(const cfg::Config& c, cfg::Key key) {
  switch (key) {
    case cfg::Key::kMode: return c.mode.value ? json(cfg::mode_name(*c.mode.value)) : json(nullptr);
    case cfg::Key::kInterval: return c.interval.value ? json(c.interval.value->ns) : json(nullptr);
    case cfg::Key::kInclude: return c.include.value ? json(*c.include.value) : json(nullptr);
    case cfg::Key::kExclude: return c.exclude.value ? json(*c.exclude.value) : json(nullptr);
    case cfg::Key::kIncludeModules: return c.include_modules.value ? json(*c.include_modules.value) : json(nullptr);
    case cfg::Key::kExcludeModules: return c.exclude_modules.value ? json(*c.exclude_modules.value) : json(nullptr);
    case cfg::Key::kMaxDepth: return c.max_depth.value ? json(*c.max_depth.value) : json(nullptr);
    case cfg::Key::kMinDuration: return c.min_duration.value ? json(c.min_duration.value->ns) : json(nullptr);
    case cfg::Key::kStartOff: return c.start_off.value ? json(*c.start_off.value) : json(nullptr);
    case cfg::Key::kChrono: return c.chrono.value ? json(*c.chrono.value) : json(nullptr);
    case cfg::Key::kLibcalls: return c.libcalls.value ? json(*c.libcalls.value) : json(nullptr);
    case cfg::Key::kPatchImports: return c.patch_imports.value ? json(*c.patch_imports.value) : json(nullptr);
    case cfg::Key::kPatchCallers: return c.patch_callers.value ? json(*c.patch_callers.value) : json(nullptr);
    case cfg::Key::kFollow: return c.follow.value ? json(cfg::follow_name(*c.follow.value)) : json(nullptr);
    case cfg::Key::kOutput: return c.output.value ? json(*c.output.value) : json(nullptr);
    case cfg::Key::kNameWidth: return c.name_width.value ? json(*c.name_width.value) : json(nullptr);
  }
  return nullptr;
}

void print_text(const cfg::Config& c) {
  std::printf("config file: %s\n", c.file.empty() ? "none" : c.file.c_str());
  std::vector<std::array<std::string, 3>> rows = {{"KEY", "VALUE", "SOURCE"}};
  for (const cfg::KeyInfo& k : cfg::all_keys()) {
    const bool set = cfg::is_set(c, k.key);
    rows.push_back({k.toml, set ? cfg::value_text(c, k.key) : k.default_text, cfg::describe(cfg::origin_of(c, k.key))});
  }
  size_t w0 = 0, w1 = 0;
  for (const auto& r : rows) {
    w0 = std::max(w0, r[0].size());
    w1 = std::max(w1, r[1].size());
  }
  for (const auto& r : rows)
    std::printf("%-*s  %-*s  %s\n", static_cast<int>(w0), r[0].c_str(), static_cast<int>(w1), r[1].c_str(),
                r[2].c_str());
  const auto env = cfg::runtime_environment(c);
  std::printf("\nA traced program gets:%s\n", env.empty() ? " no settings (the runtime's defaults)" : "");
  for (const auto& [name, value] : env) std::printf("  %s=%s\n", name.c_str(), value.c_str());
}

void print_csv(const cfg::Config& c) {
  std::printf("key,value,source,origin\n");
  for (const cfg::KeyInfo& k : cfg::all_keys()) {
    const bool set = cfg::is_set(c, k.key);
    const cfg::Origin& o = cfg::origin_of(c, k.key);
    std::printf("%s,%s,%s,%s\n", k.toml, csv_field(set ? cfg::value_text(c, k.key) : k.default_text).c_str(),
                cfg::source_name(o.source), csv_field(cfg::describe(o)).c_str());
  }
}

void print_json(const cfg::Config& c) {
  json settings = json::array();
  for (const cfg::KeyInfo& k : cfg::all_keys()) {
    const bool set = cfg::is_set(c, k.key);
    const cfg::Origin& o = cfg::origin_of(c, k.key);
    json j;
    j["key"] = k.toml;
    j["env"] = k.env;
    j["value"] = json_value(c, k.key);  // null: the default applies
    j["text"] = set ? cfg::value_text(c, k.key) : std::string(k.default_text);
    j["source"] = cfg::source_name(o.source);
    if (o.source == cfg::Source::kFile) {
      j["file"] = o.where;
      j["line"] = o.line;
    } else if (o.source != cfg::Source::kDefault) {
      j[o.source == cfg::Source::kEnv ? "variable" : "flag"] = o.where;
    }
    settings.push_back(std::move(j));
  }
  json env = json::object();
  for (const auto& [name, value] : cfg::runtime_environment(c)) env[name] = value;
  json out{{"file", c.file.empty() ? json(nullptr) : json(c.file)},
           {"settings", std::move(settings)},
           {"runtime_env", std::move(env)}};
  std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

Command config_command() {
  return {"config", "Show every setting, its value and where it comes from (flag, environment, file)",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<Opts>();
            auto settings = std::make_shared<cfg::Flags>(app, cfg::every_key());
            app.add_option("--format", o->format, std::string("Output: ") + kOutputFormatNames + " (default: text)")
                ->type_name("FORMAT");
            app.footer(
                "Durations are shown for people (2.5ms) in text and CSV, in whole ns in JSON; the\n"
                "variables a traced program gets are normalized (2500000ns, a,b, 1/0).\n" +
                cfg::Flags::help_footer());
            return [o, settings]() -> Result<int> {
              CALLSCOPE_TRY(OutputFormat format, parse_output_format(o->format));
              std::vector<std::string> warnings;
              CALLSCOPE_TRY(cfg::Config c, settings->resolve(&warnings));
              for (const std::string& w : warnings) print_warning("config", w);
              if (format == OutputFormat::kJson)
                print_json(c);
              else if (format == OutputFormat::kCsv)
                print_csv(c);
              else
                print_text(c);
              return 0;
            };
          }};
}

}  // namespace callscope::cli
