// The probe catalog's matching (probes.h) and the driver's firing order and
// timing (driver.h), with a consumer that records what fires, over small
// traces written from their text form (tests/golden/text_trace.h).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "analysis/off_cpu.h"
#include "format/raw_encoder.h"
#include "format/trace_reader.h"
#include "query/driver.h"
#include "query/probes.h"
#include "query/session.h"
#include "symbolize/symbolizer.h"
#include "text_trace.h"
#include "trace_test_util.h"

namespace callscope::query {
namespace {

CatalogInput sample_input() {
  CatalogInput in;
  CatalogInput::Process p;
  p.pid = 100;
  CatalogInput::Module app{"app", true, {}};
  app.functions = {{"main", "", 0x1000}, {"foo", "", 0x1100}, {"ns::bar()", "_ZN2ns3barEv", 0x1200},
                   {"foo", "", 0x1300}};  // a second static foo
  CatalogInput::Module lib{"libfoo.so.1", false, {{"f", "", 0x7000}}};
  p.modules = {app, lib};
  in.processes.push_back(p);
  CatalogInput::Process q;
  q.pid = 200;
  q.modules = {CatalogInput::Module{"other", true, {{"main", "", 0x1000}}}};
  in.processes.push_back(q);
  return in;
}

ProbeSpec spec(const std::string& text) {
  CompileOptions o;
  o.target = 100;
  o.macro_args = {"foo"};
  auto s = parse_probe_description(text, o);
  EXPECT_TRUE(s) << s.error().message();
  return s ? *s : ProbeSpec{};
}

// The matched probes as "provider:module:function:name", in id order.
std::vector<std::string> names(Catalog& c, const std::string& text) {
  auto ids = c.match(spec(text));
  EXPECT_TRUE(ids) << ids.error().message();
  std::vector<std::string> out;
  if (ids)
    for (uint32_t id : *ids) out.push_back(c.probe(id).full_name());
  return out;
}

using Names = std::vector<std::string>;

TEST(Catalog, BuiltInProbesHaveDtracesIds) {
  Catalog c(sample_input());
  EXPECT_EQ(c.probe(1).full_name(), "dtrace:::BEGIN");
  EXPECT_EQ(c.probe(2).full_name(), "dtrace:::END");
  EXPECT_EQ(c.probe(3).full_name(), "dtrace:::ERROR");
  EXPECT_EQ(names(c, "BEGIN"), Names{"dtrace:::BEGIN"});
  EXPECT_EQ(names(c, "proc:::exit"), Names{"proc:::exit"});
  EXPECT_EQ(names(c, "proc:::lwp-*").size(), 2u);
}

TEST(Catalog, PidModulesByFileNameAndAout) {
  Catalog c(sample_input());
  EXPECT_EQ(names(c, "pid100:a.out::entry"),
            (Names{"pid100:app:main:entry", "pid100:app:foo:entry", "pid100:app:ns::bar():entry"}));
  EXPECT_EQ(names(c, "pid100:app:main:"), (Names{"pid100:app:main:entry", "pid100:app:main:return"}));
  for (const char* m : {"libfoo.so.1", "libfoo.so", "libfoo", "libfoo*"})
    EXPECT_EQ(names(c, std::string("pid100:") + m + "::return"), Names{"pid100:libfoo.so.1:f:return"}) << m;
  EXPECT_TRUE(names(c, "pid100:libfo::entry").empty());
}

TEST(Catalog, ProvidersTargetGlobsAndFpid) {
  Catalog c(sample_input());
  EXPECT_EQ(names(c, "pid$target:a.out:main:entry"), Names{"pid100:app:main:entry"});
  EXPECT_EQ(names(c, "fpid100:a.out:main:entry"), Names{"pid100:app:main:entry"});
  EXPECT_EQ(names(c, "pid*::main:entry"), (Names{"pid100:app:main:entry", "pid200:other:main:entry"}));
  EXPECT_EQ(names(c, "pid200:::return"), Names{"pid200:other:main:return"});
  EXPECT_EQ(names(c, "pid100::$1:entry"), Names{"pid100:app:foo:entry"});
}

TEST(Catalog, FunctionsByDemangledOrMangledGlob) {
  Catalog c(sample_input());
  EXPECT_EQ(names(c, "pid100::ns\\:\\:bar*:entry"), Names{"pid100:app:ns::bar():entry"});  // "\:" in a field
  EXPECT_EQ(names(c, "pid100::ns??bar*:entry"), Names{"pid100:app:ns::bar():entry"});
  EXPECT_EQ(names(c, "pid100::_ZN2ns*:entry"), Names{"pid100:app:ns::bar():entry"});
  EXPECT_EQ(names(c, "pid100::[fm]*:entry"),
            (Names{"pid100:app:main:entry", "pid100:app:foo:entry", "pid100:libfoo.so.1:f:entry"}));
  // A name at two addresses is one probe, found at both.
  const auto f1 = c.function_at(0, 0x1100), f2 = c.function_at(0, 0x1300);
  ASSERT_TRUE(f1 && f2);
  EXPECT_EQ(*f1, *f2);
}

TEST(Catalog, PartialDescriptionsReadFromTheRight) {
  auto s = spec("foo:entry");
  EXPECT_EQ(s.provider, "");
  EXPECT_EQ(s.module, "");
  EXPECT_EQ(s.function, "foo");
  EXPECT_EQ(s.name, "entry");
  Catalog c(sample_input());
  EXPECT_EQ(names(c, "foo:entry"), Names{"pid100:app:foo:entry"});
  EXPECT_EQ(names(c, "entry").size(), 5u);
}

// libc's lseek, lseek64 and llseek at one address: each its own probe, and
// an address names the one asked for (the symbolizer's: what the program
// imports), else the first listed.
TEST(Catalog, AliasesAtOneAddressEachHaveProbes) {
  CatalogInput in;
  CatalogInput::Process p;
  p.pid = 100;
  p.modules = {CatalogInput::Module{
      "libc.so.6", false, {{"llseek", "", 0x5000}, {"lseek", "", 0x5000}, {"lseek64", "", 0x5000}, {"read", "", 0x6000}}}};
  in.processes.push_back(p);
  Catalog c(in);
  EXPECT_EQ(names(c, "pid100:libc::entry").size(), 4u);
  auto name_at = [&](uint64_t addr, std::string_view prefer) {
    auto fn = c.function_at(0, addr, prefer);
    return fn ? c.functions()[*fn].name : std::string("none");
  };
  EXPECT_TRUE(c.has_aliases(0, 0x5000));
  EXPECT_FALSE(c.has_aliases(0, 0x6000));
  EXPECT_EQ(name_at(0x5000, ""), "llseek");
  EXPECT_EQ(name_at(0x5000, "lseek64"), "lseek64");
  EXPECT_EQ(name_at(0x5000, "lseek"), "lseek");
  EXPECT_EQ(name_at(0x5000, "nosuch"), "llseek");
  EXPECT_EQ(name_at(0x6000, "lseek64"), "read");
  EXPECT_EQ(name_at(0x7000, ""), "none");
}

TEST(Catalog, OffsetProbesAreRefused) {
  Catalog c(sample_input());
  auto r = c.match(spec("pid100:a.out:main:4"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "probe description pid100:a.out:main:4: offset probes are not supported: callscope sees function entry "
            "and return only");
}

TEST(Catalog, NoMatchInDtracesWords) {
  Catalog c(sample_input());
  const ProbeSpec s = spec("pid100:a.out:nosuch:entry");
  auto r = c.match(s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(no_match_message(s), "probe description pid100:a.out:nosuch:entry does not match any probes");
}

TEST(Catalog, ClockProbesMadeOnDemand) {
  Catalog c(sample_input());
  EXPECT_EQ(names(c, "tick-1s"), Names{"profile:::tick-1s"});
  EXPECT_EQ(names(c, "profile:::tick-1s"), Names{"profile:::tick-1s"});  // made once
  EXPECT_EQ(names(c, "profile-101"), Names{"profile:::profile-101"});
  EXPECT_TRUE(names(c, "tick-100us").empty());  // below dtrace's 200 us
  EXPECT_TRUE(names(c, "tick-1parsec").empty());
  EXPECT_EQ(names(c, "tick-*").size(), 7u);  // the six listed and tick-1s
}

TEST(Catalog, ClockUnits) {
  EXPECT_EQ(clock_interval_ns("tick-1s", "tick-"), 1000000000u);
  EXPECT_EQ(clock_interval_ns("tick-1sec", "tick-"), 1000000000u);
  EXPECT_EQ(clock_interval_ns("tick-5ms", "tick-"), 5000000u);
  EXPECT_EQ(clock_interval_ns("tick-200us", "tick-"), 200000u);
  EXPECT_EQ(clock_interval_ns("tick-300000ns", "tick-"), 300000u);
  EXPECT_EQ(clock_interval_ns("tick-2m", "tick-"), 120000000000u);
  EXPECT_EQ(clock_interval_ns("tick-1h", "tick-"), 3600000000000u);
  EXPECT_EQ(clock_interval_ns("tick-1d", "tick-"), 86400000000000u);
  EXPECT_EQ(clock_interval_ns("profile-100", "profile-"), 10000000u);
  EXPECT_EQ(clock_interval_ns("profile-100hz", "profile-"), 10000000u);
  EXPECT_FALSE(clock_interval_ns("tick-", "tick-"));
  EXPECT_FALSE(clock_interval_ns("tick-0", "tick-"));
  EXPECT_FALSE(clock_interval_ns("tick-5x", "tick-"));
}

TEST(Catalog, DescriptionErrors) {
  CompileOptions none;
  auto r = parse_probe_description("pid$target:::entry", none);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "invalid probe description \"pid$target:::entry\": $target is not set (no trace to take it from)");
  r = parse_probe_description("a:b:c:d:e", none);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "invalid probe description \"a:b:c:d:e\": too many ':' (at most 3)");
  r = parse_probe_description("pid1::$2:entry", none);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "invalid probe description \"pid1::$2:entry\": macro argument $2 is not defined");
  // The query's own process: $pid, $ppid, ... (dtrace's macro variables).
  auto own = parse_probe_description("pid$ppid:a.out:main$pid:entry", none);
  ASSERT_TRUE(own) << own.error().message();
  EXPECT_EQ(own->provider, "pid" + std::to_string(::getppid()));
  EXPECT_EQ(own->function, "main" + std::to_string(::getpid()));
  r = parse_probe_description("pid$nosuch:::entry", none);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("unknown macro at '$nosuch'"), std::string::npos) << r.error().message();
}

// The kernel's providers (issue 33): their probes when the trace holds
// the events; when not, a description naming the provider outright is
// refused with why, and a glob matches nothing.
TEST(Catalog, KernelProviders) {
  CompileOptions none;
  auto spec = [&](const char* text) {
    auto s = parse_probe_description(text, none);
    EXPECT_TRUE(s) << text;
    return *s;
  };
  CatalogInput all;
  all.all_kernel_providers();
  Catalog c(all);
  auto read = c.match(spec("syscall::read:entry"));
  ASSERT_TRUE(read);
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ(c.probe(read->front()).kind, ProbeKind::kSyscallEntry);
  EXPECT_EQ(c.probe(read->front()).syscall, analysis::syscall_number("read"));
  EXPECT_EQ(c.probe(read->front()).module, "vmlinux");
  auto hard = c.match(spec("pf:::hardflt"));
  ASSERT_TRUE(hard);
  ASSERT_EQ(hard->size(), 1u);
  EXPECT_EQ(c.probe(hard->front()).fault, FaultKind::kMajor);
  EXPECT_EQ(c.match(spec("sched:::"))->size(), 5u);
  EXPECT_EQ(c.match(spec("io:::"))->size(), 2u);
  auto kind = c.match(spec("pf:::dzero_flt"));
  ASSERT_FALSE(kind);
  EXPECT_NE(kind.error().message().find("say whether a fault was major or minor"), std::string::npos);

  CatalogInput lacking;
  lacking.missing["syscall"] = "no system calls here";
  Catalog d(lacking);
  auto refused = d.match(spec("syscall::read:entry"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(), "probe description syscall::read:entry: no system calls here");
  auto glob = d.match(spec("sys*:::entry"));
  ASSERT_TRUE(glob);
  EXPECT_TRUE(glob->empty());
}

TEST(Catalog, ListLayoutIsDtraces) {
  Catalog c(sample_input());
  EXPECT_EQ(list_header(), "   ID   PROVIDER            MODULE                          FUNCTION NAME\n");
  EXPECT_EQ(list_line(c.probe(1)), "    1     dtrace " + std::string(17, ' ') + " " + std::string(33, ' ') + " BEGIN\n");
}

// A consumer that writes down each firing.
struct Recorder final : Consumer {
  const Catalog* catalog = nullptr;
  std::vector<std::pair<uint32_t, size_t>> enabled;
  std::vector<std::string> lines;
  std::vector<Firing> firings;
  std::vector<std::vector<uint64_t>> stacks;
  std::string exit_on;  // a probe whose firing calls exit()
  bool done = false;
  void enable(const ProbeInfo& p, size_t clause) override { enabled.emplace_back(p.id, clause); }
  void fire(const Firing& f) override {
    const Probe& p = catalog->probe(f.probe->id);
    std::string line = p.full_name() + " t=" + std::to_string(f.timestamp) + " tid=" + std::to_string(f.tid);
    if (p.kind == ProbeKind::kReturn)
      line += " dur=" + std::to_string(f.duration) + " self=" + std::to_string(f.selfduration);
    line += " depth=" + std::to_string(f.nframes);
    lines.push_back(line);
    firings.push_back(f);
    stacks.emplace_back(f.frames, f.frames + f.nframes);
    if (p.full_name() == exit_on) done = true;
  }
  bool exited() const override { return done; }
};

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/callscope-query-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    ::unlink((dir_ + "/t.trace").c_str());
    ::rmdir(dir_.c_str());
  }
  // Runs the descriptions (one clause each) over the trace; "error: ..." on failure.
  std::vector<std::string> run(const std::string& text, const std::vector<std::string>& descriptions,
                               Recorder& rec, bool allow_zero = false) {
    const std::string path = dir_ + "/t.trace";
    auto st = golden::text_to_trace(text, path);
    EXPECT_TRUE(st) << st.error().message();
    auto trace = format::TraceReader::open(path);
    EXPECT_TRUE(trace) << trace.error().message();
    if (!trace) return {};
    symbolize::Symbolizer sym(**trace);
    std::vector<std::string> warnings;
    Catalog catalog(catalog_input(**trace, warnings));
    rec.catalog = &catalog;
    Strings strings;
    Driver d(**trace, catalog, sym, strings);
    CompileOptions o;
    o.target = Driver::target_pid(**trace);
    std::vector<std::vector<ProbeSpec>> clauses;
    for (const auto& text_spec : descriptions) {
      auto s = parse_probe_description(text_spec, o);
      if (!s) return {"error: " + s.error().message()};
      clauses.push_back({*s});
    }
    if (auto e = d.enable(clauses, allow_zero, rec); !e) return {"error: " + e.error().message()};
    if (auto r = d.run(rec); !r) return {"error: " + r.error().message()};
    events_ = d.stats().events;
    return rec.lines;
  }
  std::string dir_;
  uint64_t events_ = 0;
};

// main 0x401000 > work 0x401100 > leaf 0x401200; 1 tick = 1 ns. The module
// file does not exist: functions are named by the symbolizer as met, and
// descriptions name the module (else no probe matches at the start).
constexpr const char* kOneThread = R"(clock monotonic
process pid=7 ppid=1 exe=/nonexistent/app argv=app exit=0
module process=0 path=/nonexistent/app low=0x400000 high=0x500000 bias=0
thread process=0 tid=7 name=app
0 entry 100 0x401000 sp=0x8000
0 entry 200 0x401100 sp=0x7f00
0 entry 300 0x401200 sp=0x7e00
0 exit 350
0 entry 400 0x401200 sp=0x7e00
0 exit 500
0 exit 900
0 exit 1000
)";

TEST_F(DriverTest, EntriesAndReturnsWithDurations) {
  Recorder rec;
  auto lines = run(kOneThread, {"pid$target:app::entry", "pid7:app::return"}, rec);
  EXPECT_EQ(lines, (Names{
                       "pid7:app:app+0x401000:entry t=100 tid=7 depth=1",
                       "pid7:app:app+0x401100:entry t=200 tid=7 depth=2",
                       "pid7:app:app+0x401200:entry t=300 tid=7 depth=3",
                       "pid7:app:app+0x401200:return t=350 tid=7 dur=50 self=50 depth=3",
                       "pid7:app:app+0x401200:entry t=400 tid=7 depth=3",
                       "pid7:app:app+0x401200:return t=500 tid=7 dur=100 self=100 depth=3",
                       "pid7:app:app+0x401100:return t=900 tid=7 dur=700 self=550 depth=2",
                       "pid7:app:app+0x401000:return t=1000 tid=7 dur=900 self=200 depth=1",
                   }));
  EXPECT_EQ(events_, 8u);
  // The call path, outermost first; arg0 of an entry is the function.
  EXPECT_EQ(rec.stacks[2], (std::vector<uint64_t>{0x401000, 0x401100, 0x401200}));
  EXPECT_EQ(rec.firings[2].arg[0], 0x401200);
  EXPECT_EQ(rec.firings[3].arg[0], 0);
}

TEST_F(DriverTest, OnlyEnabledProbesFireAndBeginEndBracketThem) {
  Recorder rec;
  auto lines = run(kOneThread, {"BEGIN", "pid7:app:app+0x401200:return", "END"}, rec);
  EXPECT_EQ(lines, (Names{
                       "dtrace:::BEGIN t=0 tid=0 depth=0",
                       "pid7:app:app+0x401200:return t=350 tid=7 dur=50 self=50 depth=3",
                       "pid7:app:app+0x401200:return t=500 tid=7 dur=100 self=100 depth=3",
                       "dtrace:::END t=1000 tid=0 depth=0",
                   }));
}

TEST_F(DriverTest, ExitStopsFiringButEndFires) {
  Recorder rec;
  rec.exit_on = "pid7:app:app+0x401200:return";
  auto lines = run(kOneThread, {"pid7:app::return", "END"}, rec);
  // END is fired by the driver; the recorder's exited() stays true, as
  // the engine's does, and the driver fires END regardless.
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "pid7:app:app+0x401200:return t=350 tid=7 dur=50 self=50 depth=3");
  EXPECT_EQ(lines[1], "dtrace:::END t=350 tid=0 depth=0");
}

TEST_F(DriverTest, NoMatchIsAnErrorUnlessZ) {
  Recorder rec;
  EXPECT_EQ(run(kOneThread, {"pid9:a.out:nosuch:entry"}, rec),
            Names{"error: probe description pid9:a.out:nosuch:entry does not match any probes"});
  Recorder rec2;
  EXPECT_EQ(run(kOneThread, {"pid9:a.out:nosuch:entry"}, rec2, true), Names{});
  // A module whose file is gone offers its functions as they are called:
  // naming one is no error (it fires if called).
  Recorder rec3;
  EXPECT_EQ(run(kOneThread, {"pid7:a.out:nosuch:entry"}, rec3), Names{});
  // Any module: refused, or no description would ever be.
  Recorder rec4;
  EXPECT_EQ(run(kOneThread, {"pid7::nosuch:entry"}, rec4),
            Names{"error: probe description pid7::nosuch:entry does not match any probes"});
}

// Two threads of one process and a child process, interleaved in time:
// firings come in tick order across them; proc events at their ticks.
constexpr const char* kThreads = R"(clock monotonic
process pid=7 ppid=1 exe=/nonexistent/app argv=app exit=0
process pid=8 ppid=7 exe=/nonexistent/app argv=app exit=3 parent=0
module process=0 path=/nonexistent/app low=0x400000 high=0x500000 bias=0
module process=1 path=/nonexistent/app low=0x400000 high=0x500000 bias=0
thread process=0 tid=7 name=app
thread process=0 tid=9 name=worker
thread process=1 tid=8 name=child
0 entry 10 0x401000 sp=0x8000
0 entry 20 0x401100 sp=0x7f00
0 exit 60
0 entry 70 0x401100 sp=0x7f00
0 exit 75
0 exit 200
1 entry 30 0x401200 sp=0x6000
1 exit 65
1 entry 72 0x401200 sp=0x6000
1 exit 90
2 entry 40 0x401000 sp=0x5000
2 exit 80
)";

TEST_F(DriverTest, ThreadsMergedInTimeOrder) {
  Recorder rec;
  auto lines = run(kThreads, {"pid*:app::entry", "proc:::start", "proc:::create", "proc:::exit", "proc:::lwp-exit"}, rec);
  EXPECT_EQ(lines, (Names{
                       "proc:::start t=10 tid=7 depth=0",
                       "pid7:app:app+0x401000:entry t=10 tid=7 depth=1",
                       "pid7:app:app+0x401100:entry t=20 tid=7 depth=2",
                       "pid7:app:app+0x401200:entry t=30 tid=9 depth=1",
                       "proc:::create t=40 tid=7 depth=2",
                       "proc:::start t=40 tid=8 depth=0",
                       "pid8:app:app+0x401000:entry t=40 tid=8 depth=1",
                       "pid7:app:app+0x401100:entry t=70 tid=7 depth=2",
                       "pid7:app:app+0x401200:entry t=72 tid=9 depth=1",
                       "proc:::lwp-exit t=80 tid=8 depth=0",
                       "proc:::exit t=80 tid=8 depth=0",
                       "proc:::lwp-exit t=90 tid=9 depth=0",
                       "proc:::lwp-exit t=200 tid=7 depth=0",
                       "proc:::exit t=200 tid=7 depth=0",
                   }));
}

// Live (query -c): the same trace handed over piece by piece, as the
// recorder's tap does -- threads appearing, events in windows of time with a
// horizon, threads ending, processes exiting once their threads have --
// fires what the whole trace fires, in the same order.
TEST_F(DriverTest, FedPieceByPieceFiresAsTheWholeTrace) {
  const std::vector<std::string> descriptions = {"pid*:app::entry", "pid*:app::return", "proc:::start",
                                                 "proc:::create", "proc:::exit", "proc:::lwp-start",
                                                 "proc:::lwp-exit", "END"};
  Recorder whole;
  const auto expected = run(kThreads, descriptions, whole);
  ASSERT_FALSE(expected.empty());

  auto recorded = format::TraceReader::open(dir_ + "/t.trace");
  ASSERT_TRUE(recorded) << recorded.error().message();
  format::TraceReader& full = **recorded;
  auto growing = format::TraceReader::growing(full.header(), full.info());
  // Processes from the start, their exits not yet known.
  for (format::ProcessInfo p : full.processes()) {
    p.record.how = 0;
    growing->mutable_processes().push_back(p);
  }
  for (const format::ModuleInfo& m : full.modules()) growing->mutable_modules().push_back(m);
  std::vector<std::vector<format::TraceEvent>> events;
  for (uint32_t t = 0; t < full.threads().size(); ++t) events.push_back(format::test::read_events(full, t));

  symbolize::Symbolizer sym(*growing);
  std::vector<std::string> warnings;
  Catalog catalog(catalog_input(*growing, warnings));
  Recorder rec;
  rec.catalog = &catalog;
  Strings strings;
  Driver d(*growing, catalog, sym, strings);
  CompileOptions o;
  o.target = 7;
  std::vector<std::vector<ProbeSpec>> clauses;
  for (const auto& text : descriptions) clauses.push_back({*parse_probe_description(text, o)});
  ASSERT_TRUE(d.enable(clauses, false, rec));
  d.live_begin(rec);
  std::vector<bool> ended(events.size(), false);
  uint64_t before = 0;
  for (const uint64_t horizon : {25, 50, 71, 85, 150, 1000}) {
    auto& threads = growing->mutable_threads();
    for (uint32_t t = threads.size(); t < full.threads().size(); ++t) {
      if (full.threads()[t].record.start_tick > horizon) break;
      format::ThreadInfo ti = full.threads()[t];
      ti.record.end_tick = 0;
      threads.push_back(ti);
    }
    d.live_grew();
    for (uint32_t t = 0; t < threads.size(); ++t) {
      format::EventColumns cols;
      for (const format::TraceEvent& e : events[t]) {
        if (e.tick > before && e.tick <= horizon) {
          ASSERT_TRUE(cols.add(e.kind, e.tick, e.addr, e.sp, e.arg));
        }
      }
      if (!cols.empty()) d.live_events(t, std::move(cols));
      if (!ended[t] && full.threads()[t].record.end_tick <= horizon) {
        ended[t] = true;
        threads[t].record.end_tick = full.threads()[t].record.end_tick;
        d.live_ended(t);
      }
    }
    // A process exits once every thread of it has ended.
    for (uint32_t p = 0; p < full.processes().size(); ++p) {
      bool all = true, any = false;
      for (uint32_t t = 0; t < threads.size(); ++t) {
        if (threads[t].record.process_index != p) continue;
        any = true;
        all = all && ended[t];
      }
      if (any && all) growing->mutable_processes()[p].record.how = full.processes()[p].record.how;
    }
    d.live_grew();
    d.live_advance(horizon);
    before = horizon;
  }
  d.live_end(0);  // at the last event, as over the trace
  EXPECT_EQ(rec.lines, expected);
}

// exit() while several threads' decoders run: they stop, END fires.
TEST_F(DriverTest, ExitAcrossThreadsStopsEveryDecoder) {
  Recorder rec;
  rec.exit_on = "pid8:app:app+0x401000:entry";
  auto lines = run(kThreads, {"pid*:app::entry", "END"}, rec);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "dtrace:::END t=40 tid=0 depth=0");
  EXPECT_EQ(lines[lines.size() - 2], "pid8:app:app+0x401000:entry t=40 tid=8 depth=1");
}

// A pause (callscope_stop .. start) counts in no frame's time; a loss is
// the dropped calls' time: in the frame's duration, not its self time.
constexpr const char* kGaps = R"(clock monotonic
process pid=7 ppid=1 exe=/nonexistent/app argv=app exit=0
module process=0 path=/nonexistent/app low=0x400000 high=0x500000 bias=0
thread process=0 tid=7 name=app
0 entry 0 0x401000 sp=0x8000
0 pause 100
0 resume 300
0 lost 400 count=5
0 resume 450
0 exit 1000
)";

TEST_F(DriverTest, GapsInDurations) {
  Recorder rec;
  auto lines = run(kGaps, {"pid7:app::return", "proc:::lost"}, rec);
  EXPECT_EQ(lines, (Names{
                       "proc:::lost t=400 tid=7 depth=1",
                       "pid7:app:app+0x401000:return t=1000 tid=7 dur=800 self=750 depth=1",
                   }));
  ASSERT_EQ(rec.firings.size(), 2u);
  EXPECT_EQ(rec.firings[0].arg[0], 5);
}

// tick-N on trace time: every interval from the start while the trace lasts.
TEST_F(DriverTest, TicksOnTraceTime) {
  std::string text = "clock monotonic\nprocess pid=7 ppid=1 exe=/nonexistent/app argv=app exit=0\n"
                     "thread process=0 tid=7 name=app\n"
                     "0 entry 0 0x401000 sp=0x8000\n0 exit 2500000000\n";
  Recorder rec;
  auto lines = run(text, {"tick-1s", "profile-1s"}, rec);
  EXPECT_EQ(lines, (Names{
                       "profile:::tick-1s t=1000000000 tid=0 depth=0",
                       "profile:::profile-1s t=1000000000 tid=7 depth=1",
                       "profile:::tick-1s t=2000000000 tid=0 depth=0",
                       "profile:::profile-1s t=2000000000 tid=7 depth=1",
                   }));
}

}  // namespace
}  // namespace callscope::query

namespace callscope::query {
namespace {

// -P, -m, -f and -n as dtrace(1) reads them: the description completed to
// four fields from the left, then the clause (or D's default action).
TEST(DescriptionFlags, CompleteTheDescription) {
  EXPECT_EQ(description_clause('P', "pid1"), "pid1::: {}");
  EXPECT_EQ(description_clause('m', "libc"), ":libc:: {}");
  EXPECT_EQ(description_clause('m', "pid1:libc"), "pid1:libc:: {}");
  EXPECT_EQ(description_clause('f', "main"), "::main: {}");
  EXPECT_EQ(description_clause('f', "a.out:main /arg0/ { @ = count(); }"), ":a.out:main: /arg0/ { @ = count(); }");
  EXPECT_EQ(description_clause('f', "main,lex{}"), "::main:,::lex:{}");
  EXPECT_EQ(description_clause('n', "entry"), "entry {}");
  EXPECT_EQ(description_clause('n', "BEGIN { exit(0); }"), "BEGIN { exit(0); }");
}

}  // namespace
}  // namespace callscope::query
