// Parsing --limit and checking worst cases against it.
#include "stack/limits.h"

#include <cctype>

namespace callscope::stack {

Result<uint64_t> parse_byte_size(std::string_view text) {
  const std::string_view t = trim(text);
  size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
  const std::string bad = "invalid size '" + std::string(text) +
                          "': expected bytes, or a number with K or M (4096, 8K, 1M)";
  if (digits == 0 || digits > 12) return Error(bad);  // a terabyte fits; no overflow with M
  uint64_t value = std::stoull(std::string(t.substr(0, digits)));
  std::string unit(t.substr(digits));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit == "" || unit == "B") return value;
  if (unit == "K" || unit == "KB" || unit == "KIB") return value * 1024;
  if (unit == "M" || unit == "MB" || unit == "MIB") return value * 1024 * 1024;
  return Error(bad);
}

Result<std::vector<StackLimit>> parse_limits(std::string_view text) {
  std::vector<StackLimit> out;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    if (item.empty()) return Error("empty item in --limit '" + std::string(text) + "'");
    StackLimit limit;
    limit.text = std::string(item);
    // The size follows the last '=': C++ names may hold '=' (operator==).
    const size_t eq = item.rfind('=');
    if (eq == std::string_view::npos) {
      limit.every_entry = true;
      CALLSCOPE_TRY(limit.bytes, parse_byte_size(item));
    } else {
      const std::string_view name = trim(item.substr(0, eq));
      if (name.empty()) return Error("--limit '" + limit.text + "': no function before '='");
      limit.entry = parse_pattern(name);
      CALLSCOPE_TRY(limit.bytes, parse_byte_size(item.substr(eq + 1)));
    }
    out.push_back(std::move(limit));
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return out;
}

Result<std::vector<uint32_t>> limited_entries(const StackModel& model,
                                              const std::vector<StackLimit>& limits) {
  std::vector<bool> chosen(model.functions.size(), false);
  for (const StackLimit& l : limits) {
    if (l.every_entry) continue;
    const std::vector<uint32_t> match = select_functions(model, {l.entry});
    if (match.empty()) {
      return Error("--limit '" + l.text + "': no function of '" + model.path + "' matches '" +
                   l.entry.function + "'");
    }
    for (uint32_t i : match) chosen[i] = true;
  }
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < chosen.size(); ++i) {
    if (chosen[i]) out.push_back(i);
  }
  return out;
}

std::vector<LimitVerdict> check_limits(const StackModel& model, const WorstCase& worst,
                                       const std::vector<uint32_t>& entries,
                                       const std::vector<StackLimit>& limits) {
  std::vector<LimitVerdict> out;
  for (uint32_t e : entries) {
    const FunctionInfo& f = model.functions[e];
    const StackLimit* chosen = nullptr;
    for (const StackLimit& l : limits) {
      // As select_functions chooses: by name, or by the symbol as in the file.
      if (!l.every_entry && (l.entry.matches(model.module, f.name) ||
                             (!f.symbol.empty() && l.entry.matches(model.module, f.symbol)))) {
        chosen = &l;
      }
    }
    if (chosen == nullptr) {
      for (const StackLimit& l : limits) {
        if (l.every_entry) chosen = &l;
      }
    }
    if (chosen == nullptr) continue;
    const Depth& d = worst.depths[e];
    LimitVerdict v;
    v.entry = e;
    v.limit = chosen->bytes;
    const std::string limit_text = std::to_string(chosen->bytes) + " bytes";
    std::string why;
    if (d.bytes > chosen->bytes) why = std::to_string(d.bytes) + " bytes, over the limit of " + limit_text;
    std::vector<std::string> open;
    if (d.unbounded) open.push_back("recursion");
    if (d.dynamic) open.push_back("dynamic frame (alloca, VLA)");
    if (d.unknown) open.push_back("unresolved indirect call (see --unresolved)");
    if (!open.empty()) {
      std::string list;
      for (size_t k = 0; k < open.size(); ++k) {
        list += (k == 0 ? "" : k + 1 == open.size() ? " and " : ", ") + open[k];
      }
      why += (why.empty() ? "" : "; ") + std::to_string(d.bytes) + " bytes is not a bound: " + list +
             " reachable";
    }
    v.ok = why.empty();
    v.why = v.ok ? std::to_string(d.bytes) + " bytes, within the limit of " + limit_text : why;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace callscope::stack
