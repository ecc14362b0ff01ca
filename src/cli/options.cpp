// The numeric option validators of options.h.
#include "cli/options.h"

#include <string>

#include "common/output_format.h"
#include "views/replay_view.h"

namespace callscope::cli {
namespace {

// Digits only, at most 18 of them (19 may not fit a uint64).
bool plain_decimal(const std::string& s) {
  return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

CLI::Validator count_check() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (plain_decimal(s)) return "";
        return "'" + s + "' is not a count: give a whole number, 0 or more";
      },
      "");
}

CLI::Validator thread_index_check() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (plain_decimal(s)) return "";
        return "'" + s + "' is not a thread number: give a thread's # as 'callscope info' lists them (0, 1, ...)";
      },
      "");
}

CLI::Validator snapshot_check() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (plain_decimal(s) && s.find_first_not_of('0') != std::string::npos) return "";
        return "'" + s + "' is not a snapshot number: snapshots are numbered from 1, as 'callscope info' lists them";
      },
      "");
}

CLI::Validator duration_check() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        auto r = views::parse_duration_ns(s);
        return r ? std::string() : r.error().message();
      },
      "");
}

CLI::Validator format_check() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        auto r = parse_output_format(s);
        return r ? std::string() : r.error().message();
      },
      "");
}

}  // namespace callscope::cli
