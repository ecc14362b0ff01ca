// Reading the settings (config.h): the table of keys, the value parsers
// shared by the three layers, the TOML file, the environment, the flags, and
// the resolution.
#include "common/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>

// toml++ is linked as Debian's shared library, which is built with
// exceptions: toml::parse throws toml::parse_error. It is caught right at the
// call in parse_toml() and turned into an Error; nothing else here throws.
#include <toml++/toml.h>

#include <CLI/CLI.hpp>

#include "common/files.h"

extern char** environ;

namespace callscope::config {

// ---- the keys -------------------------------------------------------------------

namespace {

constexpr KeyInfo kKeys[] = {
    {Key::kMode, KeyType::kMode, "mode", "CALLSCOPE_MODE", "--mode", "MODE",
     "record (every call, the default) or profile (call trees kept inside the process)", "record", true},
    {Key::kInterval, KeyType::kDuration, "interval", "CALLSCOPE_INTERVAL", "--interval", "DURATION",
     "Profile mode: write the call trees every DURATION, as in 10s or 500ms (default: no periodic dumps)", "none",
     true},
    {Key::kInclude, KeyType::kGlobs, "include", "CALLSCOPE_INCLUDE", "--include", "GLOB",
     "Count only functions matching GLOB; the others count in their caller", "all functions", true},
    {Key::kExclude, KeyType::kGlobs, "exclude", "CALLSCOPE_EXCLUDE", "--exclude", "GLOB",
     "Do not count functions matching GLOB; their time counts in their caller, their callees still appear", "none",
     true},
    {Key::kIncludeModules, KeyType::kGlobs, "include_modules", "CALLSCOPE_INCLUDE_MODULES", "--include-module",
     "GLOB", "Count only functions of modules whose file name matches GLOB", "all modules", true},
    {Key::kExcludeModules, KeyType::kGlobs, "exclude_modules", "CALLSCOPE_EXCLUDE_MODULES", "--exclude-module",
     "GLOB", "Do not count functions of modules whose file name matches GLOB", "none", true},
    {Key::kMaxDepth, KeyType::kCount, "max_depth", "CALLSCOPE_MAX_DEPTH", "--max-depth", "N",
     "Count calls down to depth N only (0, the default: no limit)", "0", true},
    {Key::kMinDuration, KeyType::kDuration, "min_duration", "CALLSCOPE_MIN_DURATION", "--min-duration", "DURATION",
     "Do not count calls shorter than DURATION, as in 2.5ms", "0", true},
    {Key::kStartOff, KeyType::kBool, "start_off", "CALLSCOPE_START_OFF", "--start-off", "",
     "Start with recording/profiling off; callscope_start() or 'callscope ctl PID start' turns it on", "false",
     true},
    {Key::kChrono, KeyType::kGlobs, "chrono", "CALLSCOPE_CHRONO", "--chrono", "GLOB",
     "Keep a full chronological listing only inside the subtrees of functions matching GLOB", "none", true},
    {Key::kLibcalls, KeyType::kBool, "libcalls", "CALLSCOPE_LIBCALLS", "--libcalls", "",
     "Record every call from the executable into shared libraries (its GOT slots are hooked; no recompiling)",
     "false", true},
    {Key::kPatchImports, KeyType::kGlobs, "patch_imports", "CALLSCOPE_PATCH_IMPORTS", "--patch-imports", "GLOB",
     "Record every call that modules matching GLOB make into other modules (their imports), as CAP's "
     "[PATCH IMPORTS]; 'a.out' (as in D probes) or its file name names the executable",
     "none", true},
    {Key::kPatchCallers, KeyType::kGlobs, "patch_callers", "CALLSCOPE_PATCH_CALLERS", "--patch-callers", "GLOB",
     "Record every call into the functions of modules matching GLOB, from any module, as CAP's [PATCH CALLERS]",
     "none", true},
    {Key::kFollow, KeyType::kFollow, "follow", "CALLSCOPE_FOLLOW", "--follow", "WHICH",
     "Which processes the program starts are traced: hooked (those with something to record: hooks, "
     "patchable entries, or --libcalls/--memory; the others cost almost nothing and are only counted), all "
     "(every one, each in the trace), none (only the program itself); the program itself always is",
     "hooked", true},
    {Key::kOutput, KeyType::kPath, "output", "CALLSCOPE_OUTPUT", "-o,--output", "FILE",
     "Trace file to write (default: callscope.trace)", "callscope.trace", false},
    {Key::kNameWidth, KeyType::kCount, "name_width", "CALLSCOPE_NAME_WIDTH", "--name-width", "N",
     "Text reports: cut function names to N characters, ending in '...' (0, the default: whole names)", "0", false},
};
static_assert(std::size(kKeys) == kKeyCount);

// The CALLSCOPE_* variables that are not settings: set by callscope for the
// runtime, or read by the scripts. Never warned about.
constexpr const char* kOtherVariables[] = {
    "CALLSCOPE_DIR",     "CALLSCOPE_RECORDER_PID", "CALLSCOPE_CLOCK",   "CALLSCOPE_RUNTIME",
    "CALLSCOPE_CTL_DIR", "CALLSCOPE_BUILD",        "CALLSCOPE_ROOT_PID",        "CALLSCOPE_SKIP_APT", "CALLSCOPE_NO_ASAN",
};

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

std::span<const KeyInfo> all_keys() { return kKeys; }

const KeyInfo& key_info(Key key) { return kKeys[static_cast<size_t>(key)]; }

std::string toml_key_names() {
  std::vector<std::string> names;
  for (const KeyInfo& k : kKeys) names.push_back(k.toml);
  return join(names, ", ");
}

std::string env_var_names() {
  std::vector<std::string> names;
  for (const KeyInfo& k : kKeys) names.push_back(k.env);
  return join(names, ", ");
}

// ---- values ---------------------------------------------------------------------

const char* mode_name(Mode m) { return m == Mode::kProfile ? "profile" : "record"; }

const char* follow_name(Follow f) {
  switch (f) {
    case Follow::kAll: return "all";
    case Follow::kNone: return "none";
    case Follow::kHooked: break;
  }
  return "hooked";
}

const char* source_name(Source s) {
  switch (s) {
    case Source::kFile: return "file";
    case Source::kEnv: return "env";
    case Source::kFlag: return "flag";
    case Source::kDefault: break;
  }
  return "default";
}

std::string describe(const Origin& o) {
  switch (o.source) {
    case Source::kFile: return "file " + o.where + ":" + std::to_string(o.line);
    case Source::kEnv:
    case Source::kFlag: return std::string(source_name(o.source)) + " " + o.where;
    case Source::kDefault: break;
  }
  return "default";
}

Result<Duration> parse_duration(std::string_view text) {
  const std::string s(text);
  auto bad = [&](const std::string& why) { return Error("bad duration '" + s + "': " + why); };
  // Integer and fraction digits, kept exact: "0.1s" is 100000000 ns, not a
  // double's approximation of it.
  size_t i = 0;
  std::string int_digits, frac_digits;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) int_digits += s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) frac_digits += s[i++];
  }
  if (int_digits.empty() && frac_digits.empty())
    return bad("expected a number and a unit (ns, us, ms or s), as in 2.5ms");
  const std::string unit = s.substr(i);
  uint64_t scale = 0;  // ns per unit
  if (unit == "ns") scale = 1;
  else if (unit == "us" || unit == "\xC2\xB5s") scale = 1000;  // also "µs"
  else if (unit == "ms") scale = 1000000;
  else if (unit == "s") scale = 1000000000;
  const bool zero = int_digits.find_first_not_of('0') == std::string::npos &&
                    frac_digits.find_first_not_of('0') == std::string::npos;
  if (unit.empty()) {
    if (zero) return Duration{0};
    return bad("give a unit: ns, us, ms or s (as in " + s + "ms)");
  }
  if (scale == 0) return bad("unknown unit '" + unit + "' (give a unit: ns, us, ms or s)");
  int_digits.erase(0, std::min(int_digits.find_first_not_of('0'), int_digits.size()));
  if (int_digits.size() > 19) return bad("too large");
  const unsigned __int128 whole = int_digits.empty() ? 0 : std::stoull(int_digits);
  unsigned __int128 ns = whole * scale;
  // The fraction in ns, rounded to the nearest: digits past the 18th cannot
  // change a whole ns of a second.
  if (frac_digits.size() > 18) frac_digits.resize(18);
  if (!frac_digits.empty()) {
    unsigned __int128 frac = std::stoull(frac_digits), pow10 = 1;
    for (size_t k = 0; k < frac_digits.size(); ++k) pow10 *= 10;
    ns += (frac * scale + pow10 / 2) / pow10;
  }
  if (ns > std::numeric_limits<uint64_t>::max() / 2) return bad("too large");
  return Duration{static_cast<uint64_t>(ns)};
}

std::string duration_text(Duration d) {
  if (d.ns == 0) return "0";
  struct Unit {
    uint64_t ns;
    const char* name;
  };
  for (const Unit u : {Unit{1000000000, "s"}, Unit{1000000, "ms"}, Unit{1000, "us"}}) {
    if (d.ns < u.ns) continue;
    std::string out = std::to_string(d.ns / u.ns);
    if (const uint64_t rest = d.ns % u.ns; rest != 0) {
      std::string frac = std::to_string(rest);
      frac.insert(0, std::to_string(u.ns).size() - 1 - frac.size(), '0');
      frac.erase(frac.find_last_not_of('0') + 1);
      out += "." + frac;
    }
    return out + u.name;
  }
  return std::to_string(d.ns) + "ns";
}

namespace {

// Calls f with the Setting of `key` (a Setting<T> of the key's type).
template <class C, class F>
void setting_of(C& c, Key key, F&& f) {
  switch (key) {
    case Key::kMode: f(c.mode); return;
    case Key::kInterval: f(c.interval); return;
    case Key::kInclude: f(c.include); return;
    case Key::kExclude: f(c.exclude); return;
    case Key::kIncludeModules: f(c.include_modules); return;
    case Key::kExcludeModules: f(c.exclude_modules); return;
    case Key::kMaxDepth: f(c.max_depth); return;
    case Key::kMinDuration: f(c.min_duration); return;
    case Key::kStartOff: f(c.start_off); return;
    case Key::kChrono: f(c.chrono); return;
    case Key::kLibcalls: f(c.libcalls); return;
    case Key::kPatchImports: f(c.patch_imports); return;
    case Key::kPatchCallers: f(c.patch_callers); return;
    case Key::kFollow: f(c.follow); return;
    case Key::kOutput: f(c.output); return;
    case Key::kNameWidth: f(c.name_width); return;
  }
}

// The value type of a Setting passed to a generic lambda.
template <class S>
using ValueOf = typename std::remove_cvref_t<S>::Type;

// One value from text (an environment variable, a flag). The message has
// no place: the caller puts the variable or flag in front.
Status parse_text(std::string_view s, Mode& out) {
  if (s == "record") out = Mode::kRecord;
  else if (s == "profile") out = Mode::kProfile;
  else return Error("unknown mode '" + std::string(s) + "' (valid modes: record, profile)");
  return ok_status();
}

Status parse_text(std::string_view s, Follow& out) {
  if (s == "hooked") out = Follow::kHooked;
  else if (s == "all") out = Follow::kAll;
  else if (s == "none") out = Follow::kNone;
  else return Error("unknown value '" + std::string(s) + "' (valid: hooked, all, none)");
  return ok_status();
}

Status parse_text(std::string_view s, Duration& out) {
  CALLSCOPE_TRY(out, parse_duration(s));
  return ok_status();
}

Status parse_text(std::string_view s, uint32_t& out) {
  const bool digits = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) return Error("'" + std::string(s) + "' is not a whole number >= 0");
  const std::string t(s);
  errno = 0;
  const unsigned long long v = std::strtoull(t.c_str(), nullptr, 10);
  if (errno == ERANGE || v > std::numeric_limits<uint32_t>::max()) return Error("'" + t + "' is too large");
  out = static_cast<uint32_t>(v);
  return ok_status();
}

Status parse_text(std::string_view s, bool& out) {
  std::string t(s);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t == "1" || t == "true" || t == "yes" || t == "on") out = true;
  else if (t == "0" || t == "false" || t == "no" || t == "off") out = false;
  else return Error("'" + std::string(s) + "' is not a boolean (use 1/0, true/false, yes/no or on/off)");
  return ok_status();
}

Status parse_text(std::string_view s, std::string& out) {
  if (s.empty()) return Error("empty file name");
  out = std::string(s);
  return ok_status();
}

Status parse_text(std::string_view s, std::vector<std::string>& out) {
  out.clear();
  append_globs(s, out);
  return ok_status();
}

std::string to_text(Mode m) { return mode_name(m); }
std::string to_text(Follow f) { return follow_name(f); }
std::string to_text(Duration d) { return duration_text(d); }
std::string to_text(uint32_t v) { return std::to_string(v); }
std::string to_text(bool b) { return b ? "true" : "false"; }
std::string to_text(const std::string& s) { return s; }
std::string to_text(const std::vector<std::string>& v) { return join(v, ","); }

std::string to_env(Mode m) { return mode_name(m); }
std::string to_env(Follow f) { return follow_name(f); }
std::string to_env(Duration d) { return std::to_string(d.ns) + "ns"; }
std::string to_env(uint32_t v) { return std::to_string(v); }
std::string to_env(bool b) { return b ? "1" : "0"; }
std::string to_env(const std::string& s) { return s; }
std::string to_env(const std::vector<std::string>& v) { return join(v, ","); }

// Checks text as a value of `type` (for the flags' validators).
Status check_text(KeyType type, std::string_view s) {
  switch (type) {
    case KeyType::kMode: { Mode v; return parse_text(s, v); }
    case KeyType::kFollow: { Follow v; return parse_text(s, v); }
    case KeyType::kDuration: { Duration v; return parse_text(s, v); }
    case KeyType::kCount: { uint32_t v; return parse_text(s, v); }
    case KeyType::kBool: { bool v; return parse_text(s, v); }
    case KeyType::kPath: { std::string v; return parse_text(s, v); }
    case KeyType::kGlobs: break;
  }
  return ok_status();
}

}  // namespace

void append_globs(std::string_view s, std::vector<std::string>& out) {
  // A comma separates globs in a variable, a flag or a TOML string: the
  // runtime reads lists comma-separated, so a glob cannot hold one.
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view item = s.substr(start, end - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = end + 1;
  }
}

bool is_set(const Config& c, Key key) {
  bool set = false;
  setting_of(c, key, [&](const auto& s) { set = s.value.has_value(); });
  return set;
}

std::string value_text(const Config& c, Key key) {
  std::string out;
  setting_of(c, key, [&](const auto& s) {
    if (s.value) out = to_text(*s.value);
  });
  return out;
}

std::string env_value(const Config& c, Key key) {
  std::string out;
  setting_of(c, key, [&](const auto& s) {
    if (s.value) out = to_env(*s.value);
  });
  return out;
}

const Origin& origin_of(const Config& c, Key key) {
  const Origin* o = nullptr;
  setting_of(c, key, [&](const auto& s) { o = &s.origin; });
  return *o;
}

// ---- the TOML file -------------------------------------------------------------------

namespace {

const char* toml_type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

const char* expected_type(KeyType t) {
  switch (t) {
    case KeyType::kMode: return "a string (\"record\" or \"profile\")";
    case KeyType::kFollow: return "a string (\"hooked\", \"all\" or \"none\")";
    case KeyType::kDuration: return "a string with a unit, as in \"10ms\"";
    case KeyType::kGlobs: return "an array of strings";
    case KeyType::kCount: return "an integer >= 0";
    case KeyType::kBool: return "true or false";
    case KeyType::kPath: return "a string";
  }
  return "?";
}

// The value of one key from its TOML node. The message has no place: the
// caller puts "FILE:LINE: 'key' " in front.
template <class T>
Status from_toml(const toml::node& n, KeyType type, T& out) {
  auto wrong_type = [&] { return Error(std::string("must be ") + expected_type(type) + ", not " + toml_type_name(n)); };
  if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    out.clear();
    if (const auto* s = n.as_string()) {
      append_globs(s->get(), out);
      return ok_status();
    }
    const toml::array* a = n.as_array();
    if (!a) return wrong_type();
    for (size_t i = 0; i < a->size(); ++i) {
      const auto* s = (*a)[i].as_string();
      const std::string item = "item " + std::to_string(i + 1);
      if (!s) return Error(std::string("must be ") + expected_type(type) + "; " + item + " is " + toml_type_name((*a)[i]));
      // One item, one glob: a comma would silently make two at the runtime.
      if (s->get().find(',') != std::string::npos)
        return Error(item + " '" + s->get() +
                     "' holds a comma, which separates globs (the runtime reads lists comma-separated); "
                     "write '?' in its place");
      append_globs(s->get(), out);
    }
    return ok_status();
  } else if constexpr (std::is_same_v<T, bool>) {
    const auto* b = n.as_boolean();
    if (!b) return wrong_type();
    out = b->get();
    return ok_status();
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    const auto* i = n.as_integer();
    if (!i || i->get() < 0) return wrong_type();
    if (i->get() > std::numeric_limits<uint32_t>::max()) return Error(std::to_string(i->get()) + " is too large");
    out = static_cast<uint32_t>(i->get());
    return ok_status();
  } else if constexpr (std::is_same_v<T, Duration>) {
    if (const auto* i = n.as_integer()) {
      if (i->get() == 0) {
        out = Duration{0};
        return ok_status();
      }
      return Error("give a unit: ns, us, ms or s, in a string such as \"" + std::to_string(i->get()) + "ms\"");
    }
    const auto* s = n.as_string();
    if (!s) return wrong_type();
    return parse_text(s->get(), out);
  } else {
    const auto* s = n.as_string();
    if (!s) return wrong_type();
    return parse_text(s->get(), out);
  }
}

// Levenshtein distance, for "did you mean".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The key a misspelt name was probably meant to be, among `keys` (compared
// in lower case, without the CALLSCOPE_ prefix): close in spelling, or one
// name holding the other ("depth" for "max_depth").
std::optional<Key> nearest_key(std::string_view name, std::span<const Key> keys) {
  const std::string n = lower(name);
  if (n.size() < 2) return std::nullopt;
  std::optional<Key> best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (Key k : keys) {
    const std::string t = key_info(k).toml;
    size_t d = edit_distance(n, t);
    const bool close = d <= std::max<size_t>(2, t.size() / 4) ||
                       (n.size() >= 3 && (t.find(n) != std::string::npos || n.find(t) != std::string::npos));
    if (close && d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

// The key named at the start of line `line` of `text` ("mode = ...") and
// the value's text up to a comment, for messages about a line the parser gave
// up on; empty when the line does not start with a key.
std::pair<std::string, std::string> key_on_line(std::string_view text, uint32_t line) {
  size_t start = 0;
  for (uint32_t l = 1; l < line && start != std::string_view::npos; ++l) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || start >= text.size()) return {};
  std::string_view rest = text.substr(start, text.find('\n', start) - start);
  auto is_blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  size_t i = 0;
  while (i < rest.size() && is_blank(rest[i])) ++i;
  size_t j = i;
  while (j < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[j])) || rest[j] == '_' || rest[j] == '-'))
    ++j;
  if (j == i) return {};
  std::string key(rest.substr(i, j - i));
  size_t k = j;
  while (k < rest.size() && is_blank(rest[k])) ++k;
  // A key is followed by '=', or by a value where '=' was forgotten.
  if (k < rest.size() && rest[k] != '=' && k == j) return {};
  if (k >= rest.size() || rest[k] != '=') return {key, ""};
  std::string_view value = rest.substr(k + 1);
  value = value.substr(0, value.find('#'));
  while (!value.empty() && is_blank(value.front())) value.remove_prefix(1);
  while (!value.empty() && is_blank(value.back())) value.remove_suffix(1);
  return {key, std::string(value)};
}

}  // namespace

Result<Config> parse_toml(std::string_view text, const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse(text, std::string_view(path));
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    std::string what(e.description());  // "Error while parsing value: ..."
    if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
    // Not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::pair<std::string, std::string> key_value = key_on_line(text, begin.line);
    const std::string& key = key_value.first;
    const std::string& value = key_value.second;
    // The likely slip: a duration or a name written without quotes.
    const auto it = std::find_if(std::begin(kKeys), std::end(kKeys), [&](const KeyInfo& k) { return key == k.toml; });
    if (it != std::end(kKeys) && !value.empty() && value[0] != '"' && value[0] != '\'' && value[0] != '[' &&
        (it->type == KeyType::kDuration || it->type == KeyType::kMode || it->type == KeyType::kFollow ||
         it->type == KeyType::kPath))
      what += "; strings take quotes: " + key + " = \"" + value + "\"";
    return Error(path + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column) + ": " +
                 (key.empty() ? "" : "'" + key + "': ") + what);
  }
  Config c;
  c.file = path;
  std::vector<Key> keys;
  for (const KeyInfo& k : kKeys) keys.push_back(k.key);
  for (auto&& entry : doc) {
    const toml::key& name = entry.first;  // not structured bindings: see above
    toml::node& node = entry.second;
    const auto it = std::find_if(std::begin(kKeys), std::end(kKeys),
                                 [&](const KeyInfo& k) { return name.str() == k.toml; });
    const uint32_t line = node.source().begin.line ? node.source().begin.line : name.source().begin.line;
    const std::string place = path + ":" + std::to_string(line) + ": ";
    if (it == std::end(kKeys)) {
      const std::optional<Key> near = nearest_key(name.str(), keys);
      return Error(place + "unknown key '" + std::string(name.str()) + "'" +
                   (near ? std::string(" (did you mean '") + key_info(*near).toml + "'?)" : "") +
                   "; valid keys: " + toml_key_names());
    }
    Status st = ok_status();
    setting_of(c, it->key, [&](auto& s) {
      ValueOf<decltype(s)> v{};
      st = from_toml(node, it->type, v);
      if (!st) return;
      s.value.emplace(std::move(v));
      s.origin = Origin{Source::kFile, path, line};
    });
    if (!st) return st.error().context(place + "'" + it->toml + "'");
  }
  return c;
}

Result<Config> load_file(const std::string& path) {
  // Through read_file_bytes: a FIFO or a directory given as the config file
  // is refused, never waited on or read as empty.
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.error().context("cannot read config file '" + path + "'");
  return parse_toml(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
}

// ---- the environment ---------------------------------------------------------------

Result<Config> parse_environment(const std::vector<std::string>& entries, std::span<const Key> keys,
                                 std::vector<std::string>* warnings) {
  Config c;
  static constexpr std::string_view kPrefix = "CALLSCOPE_";
  for (const std::string& entry : entries) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string_view name = std::string_view(entry).substr(0, eq);
    const std::string_view value = std::string_view(entry).substr(eq + 1);
    if (name.size() <= kPrefix.size() || lower(name.substr(0, kPrefix.size())) != lower(kPrefix)) continue;
    const auto it = std::find_if(std::begin(kKeys), std::end(kKeys), [&](const KeyInfo& k) { return name == k.env; });
    if (it == std::end(kKeys)) {
      // CALLSCOPE_TEST_*: knobs of the test suite (docs/testing.md), not settings.
      const bool other = name.substr(0, 15) == "CALLSCOPE_TEST_" ||
                         std::any_of(std::begin(kOtherVariables), std::end(kOtherVariables),
                                     [&](const char* v) { return name == v; });
      if (other || !warnings) continue;
      if (const std::optional<Key> near = nearest_key(name.substr(kPrefix.size()), keys))
        warnings->push_back("unknown variable " + std::string(name) + " is ignored (did you mean " +
                            key_info(*near).env + "?); the settings are " + env_var_names());
      continue;
    }
    if (std::find(keys.begin(), keys.end(), it->key) == keys.end()) continue;
    if (value.empty()) continue;  // VAR= counts as unset
    Status st = ok_status();
    setting_of(c, it->key, [&](auto& s) {
      ValueOf<decltype(s)> v{};
      st = parse_text(value, v);
      if (!st) return;
      s.value.emplace(std::move(v));
      s.origin = Origin{Source::kEnv, it->env, 0};
    });
    if (!st) return st.error().context(it->env);
  }
  return c;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

// ---- resolution -------------------------------------------------------------------

Config resolve(const Config& flags, const Config& env, const Config& file) {
  Config out = file;
  for (const KeyInfo& k : kKeys) {
    setting_of(out, k.key, [&](auto& result) {
      using S = std::remove_reference_t<decltype(result)>;
      for (const Config* layer : {&env, &flags}) {
        setting_of(*layer, k.key, [&](const auto& s) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(s)>, S>)
            if (s.value) result = s;
        });
      }
    });
  }
  out.file = file.file;
  return out;
}

std::vector<std::pair<std::string, std::string>> runtime_environment(const Config& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const KeyInfo& k : kKeys)
    if (k.runtime && is_set(c, k.key)) out.emplace_back(k.env, env_value(c, k.key));
  return out;
}

Result<Config> resolve_layers(const Config& flags, const std::vector<std::string>& environment,
                              std::span<const Key> keys, const std::string& file,
                              std::vector<std::string>* warnings) {
  CALLSCOPE_TRY(Config env, parse_environment(environment, keys, warnings));
  Config from_file;
  if (!file.empty()) {
    CALLSCOPE_TRY(from_file, load_file(file));
  }
  return resolve(flags, env, from_file);
}

// ---- flags ----------------------------------------------------------------------

namespace {

constexpr Key kRecordKeys[] = {Key::kMode,       Key::kInterval,    Key::kInclude,  Key::kExclude,
                               Key::kIncludeModules, Key::kExcludeModules, Key::kMaxDepth, Key::kMinDuration,
                               Key::kStartOff,   Key::kChrono,      Key::kLibcalls, Key::kPatchImports,
                               Key::kPatchCallers, Key::kFollow, Key::kOutput};
constexpr Key kAttachKeys[] = {Key::kMode,       Key::kInterval,    Key::kInclude,  Key::kExclude,
                               Key::kIncludeModules, Key::kExcludeModules, Key::kMaxDepth, Key::kMinDuration,
                               Key::kStartOff,   Key::kChrono,      Key::kLibcalls, Key::kPatchImports,
                               Key::kPatchCallers, Key::kOutput};
constexpr Key kReportKeys[] = {Key::kNameWidth};
constexpr Key kEveryKey[] = {Key::kMode,       Key::kInterval,    Key::kInclude,  Key::kExclude,
                             Key::kIncludeModules, Key::kExcludeModules, Key::kMaxDepth, Key::kMinDuration,
                             Key::kStartOff,   Key::kChrono,      Key::kLibcalls, Key::kPatchImports,
                             Key::kPatchCallers, Key::kFollow,  Key::kOutput,  Key::kNameWidth};
static_assert(std::size(kEveryKey) == kKeyCount);

// "--output" of "-o,--output": the name an origin shows.
std::string long_name(const char* flag) {
  const std::string_view f(flag);
  const size_t comma = f.rfind(',');
  return std::string(comma == std::string_view::npos ? f : f.substr(comma + 1));
}

}  // namespace

std::span<const Key> record_keys() { return kRecordKeys; }
std::span<const Key> attach_keys() { return kAttachKeys; }
std::span<const Key> report_keys() { return kReportKeys; }
std::span<const Key> every_key() { return kEveryKey; }

Flags::Flags(CLI::App& app, std::span<const Key> keys) : keys_(keys.begin(), keys.end()) {
  app.add_option("--config", config_file_,
                 std::string("Read settings from this TOML file (default: ./") + kDefaultFile + " when it exists)")
      ->type_name("FILE");
  for (Key k : keys) {
    const KeyInfo& info = key_info(k);
    auto slot = std::make_unique<Slot>();
    slot->key = k;
    std::string help = info.help;
    if (info.type == KeyType::kGlobs) help += " (repeatable; commas separate globs)";
    help += std::string(" [env ") + info.env + ", toml " + info.toml + "]";
    switch (info.type) {
      case KeyType::kBool:
        // --start-off, or --start-off=false to override a file or variable.
        slot->option = app.add_flag(info.flag, slot->flag, help);
        break;
      case KeyType::kGlobs:
        // One value per occurrence: `--include f ./app` must leave ./app
        // to `record`.
        slot->option = app.add_option(info.flag, slot->items, help)->allow_extra_args(false)->type_name(info.meta);
        break;
      default: {
        const KeyType type = info.type;
        slot->option = app.add_option(info.flag, slot->text, help)
                           ->type_name(info.meta)
                           ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
                           ->check(CLI::Validator(
                               [type](std::string& s) -> std::string {
                                 const Status st = check_text(type, s);
                                 return st ? std::string() : st.error().message();
                               },
                               ""));
        break;
      }
    }
    slots_.push_back(std::move(slot));
  }
}

Result<Config> Flags::layer() const {
  Config c;
  for (const auto& slot : slots_) {
    if (slot->option->count() == 0) continue;
    const KeyInfo& info = key_info(slot->key);
    Status st = ok_status();
    setting_of(c, slot->key, [&](auto& s) {
      using T = ValueOf<decltype(s)>;
      T v{};
      if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        for (const std::string& item : slot->items) append_globs(item, v);
      } else if constexpr (std::is_same_v<T, bool>) {
        v = slot->flag;
      } else {
        st = parse_text(slot->text, v);
        if (!st) return;
      }
      s.value.emplace(std::move(v));
      s.origin = Origin{Source::kFlag, long_name(info.flag), 0};
    });
    if (!st) return st.error().context(long_name(info.flag));
  }
  return c;
}

std::string Flags::file_to_read() const {
  if (!config_file_.empty()) return config_file_;
  if (::access(kDefaultFile, F_OK) == 0) return kDefaultFile;
  return "";
}

Result<Config> Flags::resolve(std::vector<std::string>* warnings) const {
  CALLSCOPE_TRY(Config flags, layer());
  return resolve_layers(flags, current_environment(), keys_, file_to_read(), warnings);
}

std::string Flags::help_footer() {
  return std::string(
             "Settings come from, highest first: these flags, CALLSCOPE_* environment\n"
             "variables, the TOML file of --config FILE (else ./") +
         kDefaultFile +
         " when it exists).\n"
         "Per key, a higher one replaces a lower one (lists too). 'callscope config' shows\n"
         "each value and where it comes from; see docs/configuration.md.";
}

}  // namespace callscope::config
