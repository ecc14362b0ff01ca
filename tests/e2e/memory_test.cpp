// record --memory (issue 12): every allocation and free the program makes --
// malloc and its family, every operator new and delete -- is in its thread's
// stream, where it happened among the calls, with its block, size and op;
// blocks freed by another thread, exceptions' objects, and threads included.
// Read through `callscope dump`, as a user sees them. Across processes
// (issue 30): each process's blocks end with it, and a fork child's frees
// of its parent's blocks pair with them.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "e2e_support.h"

namespace callscope::e2e {
namespace {

struct MemEvent {
  bool alloc;
  std::string ptr, op, in;  // in: the innermost function open then ("" at the top)
  uint64_t size = 0;
  uint32_t thread = 0;
};

// The memory events of `dump`, each with the function it happened in.
std::vector<MemEvent> memory_events(const std::string& trace) {
  RunResult d = callscope({"dump", trace});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  std::vector<MemEvent> out;
  std::map<uint32_t, std::vector<std::string>> stacks;
  std::istringstream lines(d.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("T", 0) != 0) continue;
    std::istringstream in(line);
    std::string tid, seq, t, kind, depth;
    in >> tid >> seq >> t >> kind >> depth;
    const uint32_t thread = static_cast<uint32_t>(std::stoul(tid.substr(1)));
    auto& stack = stacks[thread];
    if (kind == "entry" || kind == "inherited") {
      std::string name;  // to " sp=" (C++ names hold blanks)
      std::getline(in, name);
      name = name.substr(1, name.rfind(" sp=") - 1);
      stack.push_back(name);
    } else if (kind == "exit" || kind == "unwound" || kind == "truncated") {
      if (!stack.empty()) stack.pop_back();
    } else if (kind == "alloc" || kind == "free") {
      MemEvent e;
      e.alloc = kind == "alloc";
      e.thread = thread;
      in >> e.ptr;
      std::string word;
      if (e.alloc) {
        in >> word;  // size=N
        e.size = std::stoull(word.substr(5));
      }
      in >> word;  // by
      std::getline(in, e.op);
      e.op = e.op.substr(1);
      e.in = stack.empty() ? "" : stack.back();
      out.push_back(e);
    }
  }
  return out;
}

size_t count(const std::vector<MemEvent>& ev, bool alloc, const std::string& op, uint64_t size = ~uint64_t{0},
             const std::string& in = "*") {
  size_t n = 0;
  for (const MemEvent& e : ev)
    if (e.alloc == alloc && e.op == op && (size == ~uint64_t{0} || e.size == size) && (in == "*" || e.in == in)) ++n;
  return n;
}

// `callscope memory TRACE ARGS --format csv -n 0`: each row's numbers by
// its key (the first column) and column name. Rows of the same first key (a
// function in several processes: a PROCESS column follows) are summed, but
// for their peak, the highest of theirs; text columns are left out.
std::map<std::string, std::map<std::string, uint64_t>> memory_rows(const std::string& trace,
                                                                   std::vector<std::string> args) {
  std::vector<std::string> cmd{"memory", trace};
  cmd.insert(cmd.end(), args.begin(), args.end());
  for (const char* a : {"--format", "csv", "-n", "0"}) cmd.push_back(a);
  RunResult r = callscope(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::map<std::string, uint64_t>> rows;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream in(l);
    while (std::getline(in, cell, ',')) cells.push_back(cell);
    return cells;
  };
  if (std::getline(lines, line)) header = split(line);
  while (std::getline(lines, line)) {
    const auto cells = split(line);
    if (cells.empty() || cells.size() != header.size()) continue;  // a C++ name with a comma is quoted: not here
    auto& row = rows[cells[0]];
    for (size_t i = 1; i < cells.size(); ++i) {
      if (cells[i].empty() || !std::isdigit(static_cast<unsigned char>(cells[i][0]))) continue;
      const uint64_t v = std::stoull(cells[i]);
      uint64_t& cell = row[header[i]];
      cell = header[i].rfind("peak", 0) == 0 ? std::max(cell, v) : cell + v;
    }
  }
  return rows;
}

// Whether a line of `text` holds `first`, then `then` (table cells whose
// padding depends on the other rows).
bool has_row(const std::string& text, const std::string& first, const std::string& then) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(first);
    if (at != std::string::npos && line.find(then, at + first.size()) != std::string::npos) return true;
  }
  return false;
}

// The memory fixture's figures by function, the same with hooks and unwound:
// the workers' blocks all freed in churn(), make()'s freed elsewhere.
void expect_memory_fixture_rows(const std::string& trace) {
  auto rows = memory_rows(trace, {"--by", "function"});
  EXPECT_EQ(rows["churn"]["allocs"], 2000u);
  EXPECT_EQ(rows["churn"]["bytes"], 64000u);
  EXPECT_EQ(rows["churn"]["transient"], 2000u);
  EXPECT_EQ(rows["churn"]["leaked"], 0u);
  EXPECT_EQ(rows["make"]["allocs"], 1u);
  EXPECT_EQ(rows["make"]["transient_bytes"], 100u);  // freed in drop()
  EXPECT_EQ(rows["main"]["leaked_bytes"] >= 128, true);  // the posix_memalign block
}

// memory_cpp's main: new[] of 100 bytes, an aligned new, a nothrow new[].
void expect_main_news(const std::vector<MemEvent>& ev) {
  EXPECT_EQ(count(ev, true, "operator new[]", 100, "main"), 1u);
  EXPECT_EQ(count(ev, true, "operator new", 128, "main"), 1u);   // aligned
  EXPECT_EQ(count(ev, true, "operator new[]", 48, "main"), 1u);  // nothrow
}

class MemoryTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

TEST_P(MemoryTest, EveryAllocationOfTheCFamilyWhereItHappened) {
  const std::string trace = dir_.file("m.trace");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "memory")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ev = memory_events(trace);
  EXPECT_EQ(count(ev, true, "malloc", 100, "make"), 1u);
  EXPECT_EQ(count(ev, true, "calloc", 80, "main"), 1u);
  EXPECT_EQ(count(ev, false, "realloc (old block)", ~uint64_t{0}, "main"), 2u);  // realloc's, reallocarray's
  EXPECT_EQ(count(ev, true, "realloc", 200, "main"), 1u);
  EXPECT_EQ(count(ev, true, "reallocarray", 400, "main"), 1u);  // told once (glibc's calls realloc)
  EXPECT_EQ(count(ev, false, "free", ~uint64_t{0}, "drop"), 1u);
  EXPECT_EQ(count(ev, true, "posix_memalign", 128, "main"), 1u);
  EXPECT_EQ(count(ev, true, "aligned_alloc", 256, "main"), 1u);
  // Two workers: 1000 blocks each, allocated and freed in churn().
  EXPECT_EQ(count(ev, true, "malloc", 32, "churn"), 2000u);
  size_t churn_frees = 0;
  std::map<uint32_t, size_t> by_thread;
  for (const MemEvent& e : ev) {
    if (!e.alloc && e.op == "free" && e.in == "churn") ++churn_frees;
    if (e.alloc && e.size == 32 && e.in == "churn") ++by_thread[e.thread];
  }
  EXPECT_EQ(churn_frees, 2000u);
  ASSERT_EQ(by_thread.size(), 2u);
  for (const auto& [thread, n] : by_thread) EXPECT_EQ(n, 1000u) << "thread " << thread;
  // The block make() allocated is the one drop() frees.
  std::string made, dropped;
  for (const MemEvent& e : ev) {
    if (e.alloc && e.in == "make") made = e.ptr;
    if (!e.alloc && e.in == "drop") dropped = e.ptr;
  }
  EXPECT_EQ(made, dropped);
  // callscope memory: the workers' blocks all freed in churn(), make()'s
  // freed elsewhere, the posix_memalign block (among others of main's: the
  // threads' and stdout's) never.
  RunResult mem = callscope({"memory", trace});
  ASSERT_EQ(mem.exit_code, 0) << mem.err;
  EXPECT_EQ(mem.out.find("mismatched"), std::string::npos) << mem.out;
  EXPECT_NE(mem.out.find("leaked: "), std::string::npos) << mem.out;
  expect_memory_fixture_rows(trace);
}

TEST_P(MemoryTest, EveryFormOfNewAndDeleteAndBlocksFreedElsewhere) {
  const std::string trace = dir_.file("m.trace");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "memory_cpp")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("caught: thrown on purpose"), std::string::npos) << r.out;
  const auto ev = memory_events(trace);
  EXPECT_EQ(count(ev, true, "operator new", 4, "one()"), 1u);
  expect_main_news(ev);
  EXPECT_GE(count(ev, false, "operator delete[]"), 2u);
  EXPECT_GE(count(ev, false, "operator delete"), 3u);
  // The exception's object, allocated inside thrower().
  size_t in_thrower = 0;
  for (const MemEvent& e : ev) in_thrower += e.alloc && e.in == "thrower()";
  EXPECT_GE(in_thrower, 1u);
  // No new was told twice: every operator new is one block.
  std::map<std::string, int> live;
  for (const MemEvent& e : ev) {
    if (e.op.rfind("operator new", 0) == 0) {
      EXPECT_EQ(live[e.ptr]++, 0) << "block " << e.ptr << " allocated twice";
    }
    if (e.op.rfind("operator delete", 0) == 0) live[e.ptr] = 0;
  }
  // The int main gave the thread is freed there (thread 1).
  size_t freed_elsewhere = 0;
  for (const MemEvent& e : ev) freed_elsewhere += !e.alloc && e.thread == 1 && e.op == "operator delete";
  EXPECT_GE(freed_elsewhere, 1u);
}

// A program that replaces the basic operator new and delete keeps them:
// every other form reaches them (a sized delete here), and their malloc and
// free are what is told.
TEST_P(MemoryTest, AProgramsOwnNewAndDeleteAreKept) {
  const std::string trace = dir_.file("r.trace");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "memory_replaced")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("replaced new and delete kept"), std::string::npos) << r.out;
  const auto ev = memory_events(trace);
  EXPECT_EQ(count(ev, true, "operator new"), 0u);
  EXPECT_EQ(count(ev, false, "operator delete"), 0u);
  EXPECT_EQ(count(ev, true, "malloc", 32 + 8 + 16, "operator new(unsigned long)"), 1u);  // the S, its vptr, the header
  EXPECT_EQ(count(ev, false, "free", ~uint64_t{0}, "operator delete(void*)"), 1u);
}

// The public API (tags, a program's own pool), anonymous mappings, a
// realloc chain, blocks freed by another thread, a fork child, and marks as
// the ends of a window: exact counts and bytes per function and tag.
TEST_P(MemoryTest, TagsPoolsMappingsForkAndWindows) {
  const std::string trace = dir_.file("a.trace");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "memory_api")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
  auto fn = memory_rows(trace, {"--by", "function"});
  EXPECT_EQ(fn["setup"]["allocs"], 10u);
  EXPECT_EQ(fn["setup"]["bytes"], 10000u);
  EXPECT_EQ(fn["setup"]["leaked"], 0u);
  EXPECT_EQ(fn["churn"]["allocs"], 1000u);
  EXPECT_EQ(fn["churn"]["bytes"], 64000u);
  EXPECT_GE(fn["churn"]["peak_bytes"], 64u);  // two threads, one block each at a time at most
  EXPECT_LE(fn["churn"]["peak_bytes"], 128u);
  EXPECT_EQ(fn["hold"]["allocs"], 2u);          // freed by main, another thread
  EXPECT_EQ(fn["hold"]["transient_bytes"], 8192u);
  EXPECT_EQ(fn["pool"]["allocs"], 5u);  // callscope_alloc
  EXPECT_EQ(fn["pool"]["bytes"], 500u);
  EXPECT_EQ(fn["pool"]["leaked_bytes"], 100u);
  EXPECT_EQ(fn["maps"]["allocs"], 2u);  // the mmap and its mremap; not the file's mapping
  EXPECT_EQ(fn["maps"]["bytes"], uint64_t{3} << 20);
  EXPECT_EQ(fn["maps"]["peak_bytes"], uint64_t{2} << 20);
  EXPECT_EQ(fn["maps"]["leaked"], 0u);
  EXPECT_EQ(fn["chain"]["allocs"], 3u);
  EXPECT_EQ(fn["chain"]["bytes"], 60u);
  EXPECT_EQ(fn["chain"]["peak_bytes"], 30u);
  EXPECT_EQ(fn["chain"]["leaked"], 0u);
  EXPECT_EQ(fn["leak"]["leaked_bytes"], 4242u);
  EXPECT_EQ(fn["child_work"]["leaked_bytes"], 777u);  // in the fork child
  // Nothing of callscope's own (dlsym's error strings while the wrappers
  // find the C++ library's forms, in a C program) is counted.
  EXPECT_EQ(fn.count("[outside every instrumented function]"), 0u);
  auto tag = memory_rows(trace, {"--by", "tag"});
  for (const char* t : {"parser", "cache"}) {
    EXPECT_EQ(tag[t]["allocs"], 501u) << t;
    EXPECT_EQ(tag[t]["bytes"], 500u * 64 + 4096) << t;
  }
  // Past 4095 distinct tags a known tag keeps its name, a new one is the
  // overflow tag's.
  EXPECT_EQ(tag["late"]["bytes"], 333u);
  EXPECT_EQ(tag["[more than 4095 tags]"]["bytes"], 444u);
  // The window between the marks "work" and "teardown": setup()'s blocks
  // were allocated before it and freed after it.
  auto win = memory_rows(trace, {"--by", "function", "--window", "work..teardown"});
  EXPECT_EQ(win["setup"]["allocs"], 0u);
  EXPECT_EQ(win["setup"]["before_kept"], 10u);
  EXPECT_EQ(win["churn"]["transient"], 1000u);
  EXPECT_EQ(win["leak"]["impacting_bytes"], 4242u);
  RunResult mem = callscope({"memory", trace});
  EXPECT_EQ(mem.exit_code, 0) << mem.err;
  EXPECT_EQ(mem.out.find("mismatched"), std::string::npos) << mem.out;
  // The peak: maps()'s 2 MiB mapping and setup()'s blocks were live then.
  // Two processes: each row says whose (the parent is #0, the child #1).
  RunResult peak = callscope({"memory", trace, "--peak"});
  EXPECT_EQ(peak.exit_code, 0) << peak.err;
  EXPECT_TRUE(has_row(peak.out, "2 MiB  main > maps ", "#0 memory_api (")) << peak.out;
  EXPECT_TRUE(has_row(peak.out, "9.77 KiB  main > setup ", "#0 memory_api (")) << peak.out;
  RunResult leaks = callscope({"memory", trace, "--leaks"});
  EXPECT_TRUE(has_row(leaks.out, "4.14 KiB  main > leak ", "#0 memory_api (")) << leaks.out;
  EXPECT_TRUE(has_row(leaks.out, "777 B  main > child_work ", "#1 memory_api (")) << leaks.out;
  // The call tree weighted by bytes: maps() first under main.
  RunResult tree = callscope({"report", "--tree", "--metric", "alloc_bytes", trace});
  EXPECT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_NE(tree.out.find("    maps\n"), std::string::npos) << tree.out;
  // Without --memory the API records nothing.
  const std::string plain = dir_.file("p.trace");
  RunResult p = callscope({"record", "-o", plain, "--", fixture(GetParam(), "memory_api")});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  RunResult none = callscope({"memory", plain});
  EXPECT_NE(none.err.find("holds no memory events"), std::string::npos) << none.err;
}

// The D alloc provider, while the program runs (query -c records it with
// --memory because the script names alloc probes) and over its trace.
TEST_P(MemoryTest, AllocProviderLiveAndOffline) {
  const std::string program = plain_path(fixture(GetParam(), "memory"));  // -c splits at blanks
  const std::string script = "alloc:::malloc /arg1 == 32/ { @n = count(); @b = sum(arg1); } "
                             "alloc:::free /arg0 != 0/ { @f[ustack(1)] = count(); }";
  const std::string trace = dir_.file("q.trace");
  RunResult live = callscope({"query", "-q", "-o", trace, "-c", program, "-n", script});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_NE(live.out.find("             2000\n"), std::string::npos) << live.out;   // the workers' mallocs
  EXPECT_NE(live.out.find("            64000\n"), std::string::npos) << live.out;
  EXPECT_NE(live.out.find("`churn\n             2000\n"), std::string::npos) << live.out;  // their frees
  RunResult offline = callscope({"query", "-q", "-n", script, trace});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_EQ("done\n" + offline.out, live.out);  // the program's own output first
}

// C++: a tag for the rest of a scope (callscope_tag_scope).
TEST_P(MemoryTest, TagScopeInCpp) {
  const std::string trace = dir_.file("c.trace");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "api_cpp")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto tag = memory_rows(trace, {"--by", "tag"});
  EXPECT_EQ(tag["engine"]["allocs"], 1u);
  EXPECT_EQ(tag["engine"]["bytes"], 64u);
  EXPECT_EQ(tag["engine"]["transient"], 1u);
}

// The resident set by module: sampled at the start, at each dlopen (the
// library's code is there from then on), every --rss-interval and at the
// exit; a fork child gets its own start and exit.
TEST_P(MemoryTest, ResidentSetByModule) {
  const std::string trace = dir_.file("r.trace");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "dlopen_main"),
                           fixture(GetParam(), "libplugin.so")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult csv = callscope({"memory", "--resident", "--format", "csv", trace});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::map<std::string, std::set<std::string>> reasons_of;  // module -> reasons of the samples it is in
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "pid,ns,reason,module,kind,rss_kb,pss_kb,path");
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::istringstream in(line);
    std::string cell;
    while (std::getline(in, cell, ',')) f.push_back(cell);
    ASSERT_GE(f.size(), 7u) << line;
    reasons_of[f[3]].insert(f[2]);
  }
  EXPECT_EQ(reasons_of["libc.so.6"], (std::set<std::string>{"start", "dlopen", "exit"}));
  EXPECT_EQ(reasons_of["libplugin.so"].count("start"), 0u);  // not loaded yet
  EXPECT_EQ(reasons_of["libplugin.so"].count("dlopen"), 1u);
  RunResult text = callscope({"memory", "--resident", trace});
  EXPECT_NE(text.out.find("(1 start, 1 dlopen, 1 exit)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("code   libc.so.6\n"), std::string::npos) << text.out;

  // Every 5 ms over a run of 50 ms or more; a fork child has its own samples.
  const std::string steady = dir_.file("s.trace");
  RunResult s = callscope({"record", "--memory", "--rss-interval", "5ms", "-o", steady, "--",
                           fixture(GetParam(), "steady"), "1", "3000000"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  RunResult st = callscope({"memory", "--resident", steady});
  EXPECT_NE(st.out.find(" interval, 1 exit)"), std::string::npos) << st.out;
  const std::string forked = dir_.file("f.trace");
  ASSERT_EQ(callscope({"record", "--memory", "-o", forked, "--", fixture(GetParam(), "memory_api")}).exit_code, 0);
  RunResult f = callscope({"memory", "--resident", forked});
  size_t processes = 0;
  for (size_t at = f.out.find("(1 start, "); at != std::string::npos; at = f.out.find("(1 start, ", at + 1)) ++processes;
  EXPECT_EQ(processes, 2u) << f.out;
  // --rss-interval needs --memory.
  RunResult alone = callscope({"record", "--rss-interval", "5ms", "-o", dir_.file("x.trace"), "--", "true"});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--rss-interval requires --memory"), std::string::npos) << alone.err;
}

// A program built without -finstrument-functions: each allocation's path is
// unwound (DWARF CFI by default; frame pointers with --unwind fp on a build
// that keeps them). The same exact counts per function and thread as with
// hooks; the trace says its calls were unwound.
TEST_P(MemoryTest, WithoutHooksPathsAreUnwound) {
  for (const char* mode : {"auto", "fp"}) {
    SCOPED_TRACE(mode);
    const std::string trace = dir_.file(std::string("u-") + mode + ".trace");
    const std::string program = fixture(GetParam(), mode == std::string("fp") ? "memory_fp" : "memory_unhooked");
    RunResult r = callscope({"record", "--memory", "--unwind", mode, "-o", trace, "--", program});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("comes from unwinding the stack"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("unwound frames in 3 threads"), std::string::npos) << r.err;
    const auto ev = memory_events(trace);
    EXPECT_EQ(count(ev, true, "malloc", 100, "make"), 1u);
    EXPECT_EQ(count(ev, true, "malloc", 32, "churn"), 2000u);
    std::map<uint32_t, size_t> by_thread;
    for (const MemEvent& e : ev)
      if (e.alloc && e.size == 32 && e.in == "churn") ++by_thread[e.thread];
    ASSERT_EQ(by_thread.size(), 2u);
    for (const auto& [thread, n] : by_thread) EXPECT_EQ(n, 1000u) << "thread " << thread;
    expect_memory_fixture_rows(trace);
    // The path: main called make, the workers' start routine churn.
    RunResult tree = callscope({"memory", trace, "--by", "path", "--threshold", "0"});
    ASSERT_EQ(tree.exit_code, 0) << tree.err;
    EXPECT_NE(tree.out.find("main\n"), std::string::npos) << tree.out;
    const size_t main_at = tree.out.find(" main\n"), make_at = tree.out.find(" make\n");
    ASSERT_NE(make_at, std::string::npos) << tree.out;
    EXPECT_LT(main_at, make_at);
    EXPECT_NE(tree.out.find(" churn\n"), std::string::npos) << tree.out;
    RunResult info = callscope({"info", trace});
    EXPECT_NE(info.out.find("calls unwound at allocations"), std::string::npos) << info.out;
    RunResult report = callscope({"report", trace});
    EXPECT_EQ(report.exit_code, 0) << report.err;
    EXPECT_NE(report.err.find("were unwound at allocations"), std::string::npos) << report.err;
    RunResult stack = callscope({"report", "--stack", trace});
    EXPECT_EQ(stack.exit_code, 1);
    EXPECT_NE(stack.err.find("--stack needs the stack pointer of every call"), std::string::npos) << stack.err;
  }
  // C++: every new and its exception's object, with the frames of C++ code.
  const std::string cpp = dir_.file("ucpp.trace");
  RunResult r = callscope({"record", "--memory", "-o", cpp, "--", fixture(GetParam(), "memory_cpp_unhooked")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("caught: thrown on purpose"), std::string::npos) << r.out;
  const auto ev = memory_events(cpp);
  expect_main_news(ev);
  size_t thrown = 0;
  for (const MemEvent& e : ev) thrown += e.alloc && e.in.find("__cxa_allocate_exception") != std::string::npos;
  EXPECT_EQ(thrown, 1u);
}

// A program with hooks keeps them unless told: --unwind dwarf then unwinds
// anyway (the hooks are ignored), --unwind off on a program without hooks
// records allocations without paths.
TEST_P(MemoryTest, UnwindChosenByHand) {
  const std::string trace = dir_.file("d.trace");
  RunResult r = callscope({"record", "--memory", "--unwind", "dwarf", "-o", trace, "--", fixture(GetParam(), "memory")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = memory_rows(trace, {"--by", "function"});
  EXPECT_EQ(rows["churn"]["allocs"], 2000u);
  RunResult info = callscope({"info", trace});
  EXPECT_NE(info.out.find("calls unwound at allocations"), std::string::npos) << info.out;
  const std::string off = dir_.file("off.trace");
  r = callscope({"record", "--memory", "--unwind", "off", "-o", off, "--", fixture(GetParam(), "memory_unhooked")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has no -finstrument-functions hooks (nor -pg or patchable entries); running it anyway"), std::string::npos) << r.err;
  rows = memory_rows(off, {"--by", "function"});
  EXPECT_EQ(rows.count("churn"), 0u);
}

// `memory --by process` rows by pid (their key ends "(PID)"), of the
// processes whose executable's name is `exe`.
std::map<uint32_t, std::map<std::string, uint64_t>> rows_of_processes(const std::string& trace, const std::string& exe) {
  std::map<uint32_t, std::map<std::string, uint64_t>> out;
  for (auto& [key, row] : memory_rows(trace, {"--by", "process"})) {
    const size_t open = key.rfind(" (");
    if (open == std::string::npos || key.find(" " + exe + " (") == std::string::npos) continue;
    out[static_cast<uint32_t>(std::stoul(key.substr(open + 2)))] = row;
  }
  return out;
}

nlohmann::json memory_json(const std::string& trace) {
  RunResult r = callscope({"memory", trace, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// A build in small: 12 children, at most two at once, each exec'ing a
// program built without hooks (its paths unwound at allocations) that
// allocates and exits without freeing. Each child's leaks are its own --
// exactly what it says it allocated -- and end with it: the trace-wide peak
// is what two children held at once, not what the twelve allocated. The
// trace mixes the hooked parent's calls with the children's unwound frames,
// and says so.
TEST_P(MemoryTest, AProcessesBlocksEndWithIt) {
  const std::string trace = dir_.file("build.trace");
  const std::string child = fixture(GetParam(), "memory_children_unhooked");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "memory_children"), "12", child});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.out.find("ran 12 children, at most 2 at once"), std::string::npos) << r.out;
  // What each child says: "child I pid P allocated B bytes in K blocks".
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> told;  // pid -> bytes, blocks
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    int i = 0;
    unsigned pid = 0;
    unsigned long long bytes = 0, blocks = 0;
    if (std::sscanf(line.c_str(), "child %d pid %u allocated %llu bytes in %llu blocks", &i, &pid, &bytes, &blocks) == 4)
      told[pid] = {bytes, blocks};
  }
  ASSERT_EQ(told.size(), 12u) << r.out;
  const auto children = rows_of_processes(trace, "memory_children_unhooked");
  EXPECT_EQ(children.size(), 12u);
  for (const auto& [pid, said] : told) {
    SCOPED_TRACE("pid " + std::to_string(pid));
    ASSERT_EQ(children.count(pid), 1u);
    const auto& row = children.at(pid);
    EXPECT_EQ(row.at("allocs"), said.second);
    EXPECT_EQ(row.at("leaked"), said.second);
    EXPECT_EQ(row.at("leaked_bytes"), said.first);
    EXPECT_EQ(row.at("peak_bytes"), said.first);
  }
  std::vector<uint64_t> sizes;
  uint64_t all = 0;
  for (const auto& [pid, said] : told) {
    sizes.push_back(said.first);
    all += said.first;
  }
  std::sort(sizes.rbegin(), sizes.rend());
  // Besides the children, the parent and the fork children before their
  // exec: whatever they held at most, counted as slack.
  uint64_t others = 0;
  for (const auto& [key, row] : memory_rows(trace, {"--by", "process"}))
    if (key.find(" memory_children_unhooked (") == std::string::npos) others += row.at("peak_bytes");
  const nlohmann::json j = memory_json(trace);
  ASSERT_TRUE(j.is_object());
  const uint64_t peak = j["summary"]["peak_bytes"];
  EXPECT_GE(peak, sizes[0]);
  EXPECT_LE(peak, sizes[0] + sizes[1] + others) << "the twelve together: " << all;
  EXPECT_GE(j["summary"]["leaked_bytes"].get<uint64_t>(), all);
  EXPECT_EQ(j["summary"]["mismatched_frees"], 0);
  RunResult text = callscope({"memory", trace});
  EXPECT_NE(text.out.find("still allocated when their process ended, in "), std::string::npos) << text.out;
  // What the trace is: hooked calls in the parent, frames unwound in the
  // twelve images the children exec'd.
  EXPECT_NE(r.err.find(" calls from hooks in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" frames unwound at allocations in 12 processes"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unwound frames in"), std::string::npos) << r.err;
  RunResult report = callscope({"report", trace});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.err.find("this trace mixes calls from hooks"), std::string::npos) << report.err;
  RunResult info = callscope({"info", trace});
  EXPECT_NE(info.out.find("frames unwound at allocations in 12 processes"), std::string::npos) << info.out;
  // The same in info's JSON, which the HTML report's Run section reads.
  RunResult info_json = callscope({"info", "--format", "json", trace});
  const nlohmann::json ij = nlohmann::json::parse(info_json.out, nullptr, false);
  ASSERT_TRUE(ij.is_object()) << info_json.out;
  EXPECT_EQ(ij["unwound_processes"], 12);
  EXPECT_GT(ij["hooked_calls"].get<uint64_t>(), 0u);
  EXPECT_GT(ij["unwound_calls"].get<uint64_t>(), 0u);
  RunResult stack = callscope({"report", "--stack", trace});
  EXPECT_EQ(stack.exit_code, 1);
  EXPECT_NE(stack.err.find("were unwound at allocations, without one; the trace's hooked threads are measured with -t "),
            std::string::npos)
      << stack.err;
}

// A forking server (nginx's master and workers): the workers free their
// copies of the master's configuration on their way out. Those frees pair
// with the blocks inherited at the fork: no mismatched free, and no leak
// anywhere (the master frees its own copy).
TEST_P(MemoryTest, AForkChildFreesWhatItsParentAllocated) {
  const std::string trace = dir_.file("server.trace");
  RunResult r = callscope({"record", "--memory", "-o", trace, "--", fixture(GetParam(), "memory_fork_server"), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.out.find("master stopped"), std::string::npos) << r.out;
  uint64_t said = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    int w = 0, n = 0;
    unsigned pid = 0;
    if (std::sscanf(line.c_str(), "worker %d pid %u freed %d inherited blocks", &w, &pid, &n) == 3) said += n;
  }
  EXPECT_EQ(said, 10u) << r.out;
  const nlohmann::json j = memory_json(trace);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["summary"]["mismatched_frees"], 0);
  EXPECT_EQ(j["summary"]["unknown_frees"], 0);
  EXPECT_EQ(j["summary"]["inherited_frees"].get<uint64_t>(), said);
  RunResult text = callscope({"memory", trace});
  EXPECT_EQ(text.out.find("mismatched"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("inherited:   10 frees in fork children"), std::string::npos) << text.out;
  auto fn = memory_rows(trace, {"--by", "function"});
  EXPECT_EQ(fn["load_config"]["allocs"], 5u);
  EXPECT_EQ(fn["load_config"]["bytes"], 5010u);
  EXPECT_EQ(fn["load_config"]["leaked"], 0u);  // the master's, freed by the master
  EXPECT_EQ(fn["serve"]["allocs"], 21u);       // 10 and 11 requests
  EXPECT_EQ(fn["serve"]["leaked"], 0u);
}

TEST(MemoryErrorTest, RefusesWhatItCannotRecord) {
  TempDir dir;
  RunResult plain = callscope({"record", "-o", dir.file("n.trace"), "--", "true"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  RunResult none = callscope({"memory", dir.file("n.trace")});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("holds no memory events: record the program with 'callscope record --memory'"),
            std::string::npos)
      << none.err;
  RunResult missing = callscope({"memory", dir.file("absent.trace")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("absent.trace"), std::string::npos) << missing.err;
  RunResult profile = callscope({"record", "--memory", "--mode", "profile", "-o", dir.file("p.trace"), "--", "true"});
  EXPECT_NE(profile.exit_code, 0);
  EXPECT_NE(profile.err.find("--memory records every allocation among every call: it works with --mode record only"),
            std::string::npos)
      << profile.err;
  RunResult filtered =
      callscope({"record", "--memory", "--exclude", "std::*", "-o", dir.file("f.trace"), "--", "true"});
  EXPECT_NE(filtered.exit_code, 0);
  EXPECT_NE(filtered.err.find("--memory does not work with filters yet"), std::string::npos) << filtered.err;
  RunResult unwind_alone = callscope({"record", "--unwind", "dwarf", "-o", dir.file("w.trace"), "--", "true"});
  EXPECT_NE(unwind_alone.exit_code, 0);
  EXPECT_NE(unwind_alone.err.find("--unwind requires --memory"), std::string::npos) << unwind_alone.err;
  RunResult bad = callscope({"record", "--memory", "--unwind", "lbr", "-o", dir.file("b.trace"), "--", "true"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--unwind"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("lbr"), std::string::npos) << bad.err;
}

INSTANTIATE_TEST_SUITE_P(Variants, MemoryTest, ::testing::ValuesIn(variants()), VariantName());

}  // namespace
}  // namespace callscope::e2e
