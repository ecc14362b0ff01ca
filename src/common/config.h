// The settings shared by `record`, `config` and `report`, from three places
// in this order of precedence: command-line flags, CALLSCOPE_* environment
// variables, and a TOML file (--config FILE, else ./callscope.toml when it
// exists). Precedence is per key, and a list from a higher layer replaces the
// lower one's (no merging).
//
// Each layer is read into a Config of its own (every key optional, with where
// its value came from); resolve() lays them over each other. The runtime
// inside the traced program reads the result as normalized CALLSCOPE_*
// variables (runtime_environment()): durations in whole ns ("2500000ns"),
// lists comma-joined, booleans "1"/"0". See docs/configuration.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace callscope::config {

// ---- the keys -----------------------------------------------------------------

enum class Key : uint8_t {
  kMode,
  kInterval,
  kInclude,
  kExclude,
  kIncludeModules,
  kExcludeModules,
  kMaxDepth,
  kMinDuration,
  kStartOff,
  kChrono,
  kLibcalls,
  kPatchImports,
  kPatchCallers,
  kFollow,
  kOutput,
  kNameWidth,
};
inline constexpr size_t kKeyCount = 16;

enum class KeyType { kMode, kDuration, kGlobs, kCount, kBool, kPath, kFollow };

struct KeyInfo {
  Key key;
  KeyType type;
  const char* toml;     // "max_depth"
  const char* env;      // "CALLSCOPE_MAX_DEPTH"
  const char* flag;     // CLI11 names: "--max-depth", "-o,--output"
  const char* meta;     // the flag's value in --help: "N", "DURATION", "GLOB"
  const char* help;     // what it does, one line
  const char* default_text;  // shown by `callscope config` when unset
  bool runtime;         // read by the runtime in the traced program (exported to it)
};

// Every key, in the order of docs/configuration.md and `callscope config`.
std::span<const KeyInfo> all_keys();
const KeyInfo& key_info(Key key);
// "mode, interval, ..." / "CALLSCOPE_MODE, ...": for messages.
std::string toml_key_names();
std::string env_var_names();

// ---- values -------------------------------------------------------------------

enum class Mode { kRecord, kProfile };
const char* mode_name(Mode m);  // "record", "profile"

// Which of the program's descendants are traced (record --follow).
enum class Follow { kHooked, kAll, kNone };
const char* follow_name(Follow f);  // "hooked", "all", "none"

struct Duration {
  uint64_t ns = 0;
  bool operator==(const Duration&) const = default;
};
// "2.5ms", "10us", "1s", "250ns" (a decimal number and a unit), or "0".
// A bare number is refused with "give a unit: ns, us, ms or s"; fractions of
// a ns are rounded to the nearest ns.
Result<Duration> parse_duration(std::string_view text);
// A list of globs as a variable, a flag or a TOML string holds them
// ("a.out, libfoo*"), appended to `out`: split at commas, blanks trimmed,
// empty items dropped (the runtime reads CALLSCOPE_* lists the same way).
void append_globs(std::string_view s, std::vector<std::string>& out);
// The shortest exact form for people: 2500000 ns -> "2.5ms"; 0 -> "0".
std::string duration_text(Duration d);

enum class Source { kDefault, kFile, kEnv, kFlag };
const char* source_name(Source s);  // "default", "file", "env", "flag"

// Where a value came from.
struct Origin {
  Source source = Source::kDefault;
  std::string where;  // kFile: the path; kEnv: the variable; kFlag: "--mode"
  uint32_t line = 0;  // kFile: 1-based line of the value
};
// "flag --mode", "env CALLSCOPE_MODE", "file callscope.toml:3", "default".
std::string describe(const Origin& o);

template <class T>
struct Setting {
  using Type = T;
  std::optional<T> value;  // unset: the key's default applies
  Origin origin;
  T value_or(T fallback) const { return value ? *value : std::move(fallback); }
};

struct Config {
  Setting<Mode> mode;                                // default: record
  Setting<Duration> interval;                        // profile dumps; default: none
  Setting<std::vector<std::string>> include;         // function globs
  Setting<std::vector<std::string>> exclude;
  Setting<std::vector<std::string>> include_modules; // module globs
  Setting<std::vector<std::string>> exclude_modules;
  Setting<uint32_t> max_depth;                       // 0 = no limit
  Setting<Duration> min_duration;
  Setting<bool> start_off;
  Setting<std::vector<std::string>> chrono;          // function globs
  Setting<bool> libcalls;                            // hook the executable's GOT slots
  Setting<std::vector<std::string>> patch_imports;   // module globs: hook all their GOT slots
  Setting<std::vector<std::string>> patch_callers;   // module globs: hook every slot bound to them
  Setting<Follow> follow;                            // default: hooked
  Setting<std::string> output;                       // default: callscope.trace
  Setting<uint32_t> name_width;                      // 0 = automatic
  std::string file;  // the TOML file these came from ("" when none was read)
};

// Whether `key` holds a value in c.
bool is_set(const Config& c, Key key);
// The value for people ("2.5ms", "a*,b*", "true"); "" when unset.
std::string value_text(const Config& c, Key key);
// The value as the runtime reads it ("2500000ns", "a*,b*", "1"); "" when unset.
std::string env_value(const Config& c, Key key);
const Origin& origin_of(const Config& c, Key key);

// ---- the three layers ------------------------------------------------------------

inline constexpr const char* kDefaultFile = "callscope.toml";

// A TOML document. Errors name the place: "FILE:LINE: ..." with the key when
// known; an unknown key is named with the list of valid ones; a value of the
// wrong type names the key and the type expected. `path` is used in messages
// and origins only.
Result<Config> parse_toml(std::string_view text, const std::string& path);
Result<Config> load_file(const std::string& path);

// The CALLSCOPE_* variables among `environ`-style "NAME=value" entries; only
// the keys in `keys` are read (others are ignored, even when malformed). An
// empty variable counts as unset. A bad value is an error naming the variable.
// An unknown CALLSCOPE_* variable that looks like a misspelt key adds a
// warning to `warnings` (the variables callscope sets for itself, such as
// CALLSCOPE_DIR, are known).
Result<Config> parse_environment(const std::vector<std::string>& entries, std::span<const Key> keys,
                                 std::vector<std::string>* warnings);
// This process's environment as "NAME=value" entries.
std::vector<std::string> current_environment();

// The layers laid over each other per key: flags over env over file. The
// result keeps each value's origin and the file's path.
Config resolve(const Config& flags, const Config& env, const Config& file);

// What a traced program gets: ("CALLSCOPE_MODE", "profile"), ... for each set
// key the runtime reads, in key order. Unset keys are left out.
std::vector<std::pair<std::string, std::string>> runtime_environment(const Config& c);

// ---- flags ------------------------------------------------------------------------

// The keys each command offers as flags.
std::span<const Key> record_keys();  // all keys but name_width
std::span<const Key> attach_keys();  // record's but follow (an attached process has no preloaded children)
std::span<const Key> report_keys();  // name_width
std::span<const Key> every_key();    // all keys (`callscope config`)

// The flags of a set of keys plus --config FILE on one CLI11 app. CLI11
// writes into this object while parsing, so it must live as long as the app
// (commands keep it in a shared_ptr captured by their runner). Bad flag
// values are CLI11 usage errors naming the flag.
class Flags {
 public:
  // Declares the flags on `app`. Each flag's help says what it does and
  // names its variable and TOML key.
  Flags(CLI::App& app, std::span<const Key> keys);
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  // The flags given, as a Config layer.
  Result<Config> layer() const;
  // The file to read: --config FILE, else ./callscope.toml when it exists,
  // else "" (no file).
  std::string file_to_read() const;
  // Flags, this process's environment and the file, resolved. Warnings (an
  // unknown CALLSCOPE_* variable) are added to `warnings`.
  Result<Config> resolve(std::vector<std::string>* warnings) const;
  // For a command's --help footer: where else the settings come from, and
  // their precedence.
  static std::string help_footer();

 private:
  struct Slot {
    Key key;
    CLI::Option* option = nullptr;
    std::string text;                // scalar flags
    std::vector<std::string> items;  // list flags, each maybe comma-separated
    bool flag = false;               // --start-off
  };
  std::vector<std::unique_ptr<Slot>> slots_;  // stable addresses for CLI11
  std::vector<Key> keys_;
  std::string config_file_;
};

// The whole resolution for one command without CLI11 (for tests and tools):
// flags layer, environment entries, file ("" for none).
Result<Config> resolve_layers(const Config& flags, const std::vector<std::string>& environment,
                              std::span<const Key> keys, const std::string& file,
                              std::vector<std::string>* warnings);

}  // namespace callscope::config
