// Validators shared by the commands' numeric options. CLI11 reads an
// unsigned option with strtoull, which takes "-1" (as 2^64 - 1), "0x10" and
// "010" (octal); these accept plain decimal digits only, so that a negative
// or mistyped number is a usage error naming the option and what to give.
#pragma once

#include <CLI/CLI.hpp>

namespace callscope::cli {

// A count: 0, 1, 2, ... ("-n", "--depth", "--limit": 0 usually means all).
CLI::Validator count_check();
// A thread's # as 'callscope info' lists it: 0, 1, 2, ...
CLI::Validator thread_index_check();
// A profile-mode snapshot: 1, 2, ... as 'callscope info' lists them.
CLI::Validator snapshot_check();
// A duration: 10us, 1.5ms, 2s (views::parse_duration_ns).
CLI::Validator duration_check();
// An output format: text, csv, json.
CLI::Validator format_check();

}  // namespace callscope::cli
