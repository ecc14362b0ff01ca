// Library calls through the GOT (record --libcalls, --patch-imports,
// --patch-callers), for every compiler variant: exact counts of the calls a
// fixture makes into libc (strlen, qsort with its callback, malloc/free, a
// variadic snprintf), with longjmp out of a callback, calls from a signal
// handler, threads, a fork child, a library loaded and unloaded 30 times,
// C++ exceptions thrown through qsort, the -fno-plt/-z now/CET shape, and
// the -finstrument-functions hooks in the same trace; calls through pointers
// kept in data (not recorded, and said), and the names a program imports.

#include <csignal>

#include "variant_recording.h"

namespace callscope::e2e {
namespace {

class LibcallsTest : public VariantRecording {
 protected:
  // Calls of `name` made by the first process (the fork child's are its own).
  static uint64_t in_main_process(const TraceSummary& s, const std::string& name) {
    auto it = s.calls_in_process.find({0, name});
    return it == s.calls_in_process.end() ? 0 : it->second;
  }
  std::string plugin() const { return fixture(GetParam(), "libcalls_plugin.so"); }
};

TEST_P(LibcallsTest, ExactCountsOfTheExecutablesCalls) {
  TraceSummary s = record("libcalls_plain", {"--libcalls"}, {"1000", plugin()});
  EXPECT_NE(last_.err.find("sources: library calls through the GOT (--libcalls)"), std::string::npos) << last_.err;
  EXPECT_EQ(last_.err.find("no -finstrument-functions hooks"), std::string::npos) << last_.err;
  expect_balanced(s);
  EXPECT_EQ(in_main_process(s, "strlen"), static_cast<uint64_t>(counts_["strlen"]));
  EXPECT_EQ(s.calls_of("qsort"), 30u);  // 10 sorted, 20 left by longjmp from the callback
  EXPECT_EQ(counts_["jumps"], 20);
  EXPECT_EQ(s.calls_of("malloc"), 100u);
  EXPECT_EQ(s.calls_of("free"), 100u);
  EXPECT_EQ(s.calls_of("snprintf"), 50u);
  EXPECT_EQ(s.calls_of("raise"), 5u);
  EXPECT_EQ(s.calls_of("pthread_create"), 4u);
  EXPECT_EQ(s.calls_of("pthread_join"), 4u);
  EXPECT_EQ(s.calls_of("dlopen"), 0u);  // never hooked: it reads its caller's address
  EXPECT_EQ(s.calls_of("setjmp") + s.calls_of("_setjmp"), 0u);  // never hooked: it returns twice
  EXPECT_EQ(s.calls_of("longjmp"), 20u);
  // The fork child is a process of its own, with its 7 calls.
  ASSERT_EQ(s.reader->processes().size(), 2u);
  EXPECT_EQ((s.calls_in_process[{1, "strlen"}]), 7u);
  // Only the executable's calls: the plugin's own strlen calls are not.
  EXPECT_EQ(s.calls_of("strnlen"), 0u);
  // Each worker thread: its own strlen calls, balanced.
  uint64_t threads_with_1000 = 0;
  for (const ThreadSummary& t : s.threads) threads_with_1000 += t.entries == 1000 ? 1 : 0;
  EXPECT_EQ(threads_with_1000, 4u);
}

TEST_P(LibcallsTest, LongjmpOutOfAHookedCallClosesItAsUnwound) {
  record("libcalls_plain", {"--libcalls"}, {"10"});
  const std::vector<std::string> events = call_events(trace_, 0);
  uint64_t unwound_qsort = 0, closed_qsort = 0;
  for (const std::string& e : events) {
    unwound_qsort += e == "~qsort" ? 1 : 0;
    closed_qsort += e == "-qsort" ? 1 : 0;
  }
  EXPECT_EQ(closed_qsort, 10u);
  EXPECT_EQ(unwound_qsort, 20u);
}

TEST_P(LibcallsTest, CompilerHooksAndLibraryCallsInOneTrace) {
  TraceSummary s = record("libcalls_hooked", {"--libcalls"}, {"200"});
  EXPECT_NE(last_.err.find("sources: -finstrument-functions hooks, library calls through the GOT"),
            std::string::npos)
      << last_.err;
  expect_balanced(s);
  EXPECT_EQ(in_main_process(s, "strlen"), static_cast<uint64_t>(counts_["strlen"]));
  EXPECT_EQ(s.calls_of("qsort"), 30u);
  // The callback runs inside qsort: one level below it, which is below main.
  EXPECT_EQ(s.calls_of("by_value"), static_cast<uint64_t>(counts_["compares"]));
  ASSERT_FALSE(s.entry_depths["by_value"].empty());
  EXPECT_EQ(s.entry_depths["by_value"].begin()->first, 3u);
  EXPECT_EQ(s.entry_depths["qsort"].begin()->first, 2u);
  EXPECT_EQ(s.calls_of("jump_out"), 20u);
  EXPECT_EQ(s.calls_of("on_signal"), 5u);
  EXPECT_EQ(s.calls_of("worker"), 4u);
}

TEST_P(LibcallsTest, NoPltBindNowCetPie) {
  TraceSummary s = record("libcalls_noplt", {"--libcalls"}, {"500"});
  expect_balanced(s);
  EXPECT_EQ(in_main_process(s, "strlen"), static_cast<uint64_t>(counts_["strlen"]));
  EXPECT_EQ(s.calls_of("qsort"), 30u);
  EXPECT_EQ(s.calls_of("malloc"), 100u);
  EXPECT_EQ(s.calls_of("snprintf"), 50u);
}

TEST_P(LibcallsTest, PatchImportsOfALibraryLoadedThirtyTimes) {
  TraceSummary s = record("libcalls_plain", {"--patch-imports", "libcalls_plugin*"}, {"10", plugin()});
  expect_balanced(s);
  EXPECT_EQ(counts_["loads"], 30);
  // The plugin's calls, each load's own; none of the executable's.
  EXPECT_EQ(s.calls_of("strlen"), 60u);
  EXPECT_EQ(s.calls_of("strnlen"), 60u);
  EXPECT_EQ(s.calls_of("qsort"), 0u);
}

TEST_P(LibcallsTest, PatchImportsOfAOutIsLibcalls) {
  TraceSummary s = record("libcalls_plain", {"--patch-imports", "a.out"}, {"100"});
  expect_balanced(s);
  EXPECT_EQ(in_main_process(s, "strlen"), static_cast<uint64_t>(counts_["strlen"]));
  EXPECT_EQ(s.calls_of("qsort"), 30u);
}

TEST_P(LibcallsTest, PatchCallersOfLibc) {
  TraceSummary s = record("libcalls_plain", {"--patch-callers", "libc.so*"}, {"100", plugin()});
  expect_balanced(s);
  // Every module's calls into libc: the executable's and the plugin's.
  EXPECT_EQ(in_main_process(s, "strlen"), static_cast<uint64_t>(counts_["strlen"] + 60));
  EXPECT_EQ(s.calls_of("strnlen"), 60u);
  EXPECT_GE(s.calls_of("malloc"), 100u);  // and libc's own, through its PLT
  EXPECT_EQ(s.calls_of("qsort"), 30u);
}

TEST_P(LibcallsTest, ProfileModeCountsTheSame) {
  record("libcalls_plain", {"--libcalls", "--mode", "profile"}, {"1000"});
  auto rows = flat_report(trace_);
  EXPECT_EQ(num(rows["qsort"], "calls"), 30u);
  EXPECT_EQ(num(rows["malloc"], "calls"), 100u);
  EXPECT_EQ(num(rows["snprintf"], "calls"), 50u);
  // The main thread's and the four workers' (the child's: its own process).
  EXPECT_EQ(num(rows["strlen"], "calls"), static_cast<uint64_t>(counts_["strlen"] + 7));
}

TEST_P(LibcallsTest, ExceptionsThrownThroughAHookedCall) {
  TraceSummary s = record("libcalls_cpp_plain", {"--libcalls"});
  expect_balanced(s);
  EXPECT_EQ(counts_["caught"], 117);
  EXPECT_EQ(s.calls_of("strlen"), static_cast<uint64_t>(counts_["strlen"]));
  EXPECT_EQ(s.calls_of("qsort"), 100u);
  EXPECT_EQ(s.calls_of("__cxa_throw"), 150u);  // 100 from the callback, 50 in rethrows()
  EXPECT_EQ(s.calls_of("__cxa_rethrow"), 17u);
}

TEST_P(LibcallsTest, AStackSwitchAcrossAHookedCallStopsTheProgramWithTheReason) {
  // Documented in docs/recording.md, Limits: the runtime cannot follow it,
  // and must not return to a wrong address.
  const std::string trace = dir_.file("stacks.trace");
  RunResult r = callscope({"record", "--libcalls", "-o", trace, "--", fixture(GetParam(), "libcalls_stacks")});
  EXPECT_EQ(r.term_signal, SIGABRT) << r.exit_code << r.err;
  EXPECT_NE(r.err.find("a hooked library call returned to a stack we do not know"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("done="), std::string::npos) << r.out;
  // What was recorded before is in the trace.
  TraceSummary s = summarize(trace);
  EXPECT_EQ(s.calls_of("qsort"), 1u);
}

// Calls through a table of pointers in the executable's data go straight
// to libc: not recorded, and record says so, naming the functions; the
// direct calls are recorded and counted. The calls show under the names the
// program imports (lseek64, not llseek, which libc defines at the same
// address). Checked against the fixture's own counts and its relocations
// and imports as binutils reads them.
TEST_P(LibcallsTest, PointersInDataAreSaidAndImportedNamesShown) {
  TraceSummary s = record("libcalls_table", {"--libcalls"}, {"25"});
  expect_balanced(s);
  EXPECT_EQ(counts_["direct"], 50);
  EXPECT_EQ(counts_["table"], 50);
  EXPECT_EQ(s.calls_of("write"), 25u);
  EXPECT_EQ(s.calls_of("read"), 25u);
  const std::string program = fixture(GetParam(), "libcalls_table");
  RunResult relocs = run({"readelf", "-rW", program});
  ASSERT_EQ(relocs.exit_code, 0) << relocs.err;
  size_t in_data = 0;
  for (size_t at = relocs.out.find("R_X86_64_64 "); at != std::string::npos;
       at = relocs.out.find("R_X86_64_64 ", at + 1)) {
    const std::string line = relocs.out.substr(at, relocs.out.find('\n', at) - at);
    in_data += line.find(" read@") != std::string::npos || line.find(" write@") != std::string::npos;
  }
  ASSERT_EQ(in_data, 2u) << relocs.out;  // the fixture is what the test means
  const size_t said = last_.err.find("callscope record: libcalls_table: 2 pointers to hooked functions stored in data (");
  ASSERT_NE(said, std::string::npos) << last_.err;
  const std::string line = last_.err.substr(said, last_.err.find('\n', said) - said);
  EXPECT_NE(line.find("write"), std::string::npos) << line;
  EXPECT_NE(line.find("read"), std::string::npos) << line;
  EXPECT_NE(line.find("): calls through them are not recorded"), std::string::npos) << line;
  RunResult imports = run({"nm", "-D", "--undefined-only", program});
  ASSERT_EQ(imports.exit_code, 0) << imports.err;
  for (const char* name : {"open64", "lseek64", "fopen64"}) {
    EXPECT_NE(imports.out.find(std::string(" ") + name + "@"), std::string::npos) << name << " in\n" << imports.out;
    EXPECT_EQ(s.calls_of(name), 1u) << name;
  }
  EXPECT_EQ(s.calls_of("llseek") + s.calls_of("lseek") + s.calls_of("__lseek") + s.calls_of("open") +
                s.calls_of("__open64") + s.calls_of("fopen") + s.calls_of("_IO_fopen"),
            0u);
}

// Without library-call hooks, a table of pointers is nobody's business: not said.
TEST_P(LibcallsTest, PointersInDataAreNotSaidWithoutTheHooks) {
  record("libcalls_table", {"--patch-imports", "libnothing*"}, {"1"});
  EXPECT_EQ(last_.err.find("pointers to hooked functions"), std::string::npos) << last_.err;
}

INSTANTIATE_TEST_SUITE_P(Variants, LibcallsTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
