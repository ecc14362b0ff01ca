// A test over the compiler variants that records a fixture with some flags
// and keeps what record said, the fixture's own "name=count" output and the
// trace (entries_test, libcalls_test).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace callscope::e2e {

// Every thread's entries closed by exits (or as unwound), none stray.
void expect_balanced(const TraceSummary& s);

class VariantRecording : public ::testing::TestWithParam<std::string> {
 protected:
  // `callscope record -o T FLAGS... -- FIXTURE ARGS...` for this variant;
  // checks that it exits 0.
  TraceSummary record(const std::string& program, const std::vector<std::string>& flags,
                      const std::vector<std::string>& args = {}) {
    trace_ = dir_.file(program + std::to_string(++n_) + ".trace");
    std::vector<std::string> cmd{"record", "-o", trace_};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    cmd.push_back("--");
    cmd.push_back(fixture(GetParam(), program));
    cmd.insert(cmd.end(), args.begin(), args.end());
    last_ = callscope(cmd);
    EXPECT_EQ(last_.exit_code, 0) << last_.err;
    counts_ = parse_counts(last_.out);
    return summarize(trace_);
  }
  TempDir dir_;
  RunResult last_;
  std::map<std::string, long> counts_;
  std::string trace_;
  int n_ = 0;
};

}  // namespace callscope::e2e
