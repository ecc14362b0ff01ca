// libFuzzer target: any bytes as a trace file. TraceReader::open must fail
// cleanly or read on; for_each_event must never crash and must keep its own
// invariants (depths, kinds, problem messages naming where). What opens is
// then handed to the analyses and views every command runs (the call
// trees of report, its text, the memory model, measured stack depths,
// info): the reader's checks are what keep them from indexing past a table.
//
// Each input is tried twice: as given, and with the file header's check (1.3
// on) and every block header's check recomputed along the chain of blocks, so
// that mutations of header fields, sizes, types and (uncompressed) payloads
// get past the checks to the range checks and the decoders. Under libFuzzer,
// a custom mutator also changes decompressed payloads and seals them again
// (payload_mutation.h): a crafted file, which zstd's checksum does not stop.
//
// Also compiled without libFuzzer into tests/unit/format's regression test,
// which calls LLVMFuzzerTestOneInput itself.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "analysis/balance.h"
#include "analysis/memory.h"
#include "analysis/report_model.h"
#include "analysis/stack_depth.h"
#include "analysis/thread_states.h"
#include "format/module_map.h"
#include "format/trace_format.h"
#include "format/trace_reader.h"
#include "payload_mutation.h"
#include "views/sample_view.h"
#include "views/wait_view.h"
#include "views/info_view.h"
#include "views/profile_view.h"

namespace {

using namespace callscope::format;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "trace_reader_fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

// The input lives in a memfd: no disk, and a path TraceReader can open.
const std::string& input_path() {
  static const std::string path = [] {
    const int fd = ::memfd_create("callscope-fuzz-trace", 0);
    if (fd < 0) fail("memfd_create");
    return "/proc/self/fd/" + std::to_string(fd);
  }();
  return path;
}

void set_input(const uint8_t* data, size_t size) {
  const int fd = std::atoi(input_path().c_str() + std::strlen("/proc/self/fd/"));
  if (::ftruncate(fd, 0) != 0) fail("ftruncate");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) fail("pwrite");
    done += static_cast<size_t>(n);
  }
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

FILE* devnull() {
  static FILE* f = std::fopen("/dev/null", "w");
  if (!f) fail("/dev/null");
  return f;
}

// What the commands do with a trace that opened: none of it may crash, hang
// or ask for gigabytes, whatever the trace says (errors are fine).
void exercise(TraceReader& rd) {
  using namespace callscope;
  const ModuleMap map(rd.modules());
  std::vector<uint32_t> all;
  for (uint32_t t = 0; t < rd.threads().size(); ++t) all.push_back(t);
  for (uint32_t t : all) {
    const uint32_t process = rd.threads()[t].record.process_index;
    if (process >= rd.processes().size()) fail("a thread's process is not in the table");
    size_t n = 0;
    (void)rd.for_each_event(t, [&](const TraceEvent& e) {
      if (is_entry(e.kind)) (void)map.at(process, e.addr, e.tick);
      return ++n < 4096;
    });
  }
  for (const auto& m : rd.modules())
    if (m.record.process_index >= rd.processes().size()) fail("a module's process is not in the table");
  for (const auto& d : rd.dumps())
    if (d.process_index >= rd.processes().size()) fail("a snapshot's process is not in the table");
  const analysis::Resolver resolve = [](uint32_t, uint64_t addr, uint64_t) {
    return analysis::FunctionInfo{"f" + std::to_string(addr & 0xff), "m", "", 0};
  };
  auto p = rd.is_profile() ? analysis::build_profile_from_dumps(rd, analysis::final_dumps(rd), all, resolve)
                           : analysis::build_profile(rd, all, resolve);
  if (p) {
    views::ReportOptions o;
    (void)views::print_flat_profile(rd, *p, o, devnull());
    o.max_depth = 64;
    (void)views::print_call_trees(rd, *p, o, devnull());
  }
  if (rd.is_profile())
    for (uint32_t d = 0; d < rd.dumps().size() && d < 8; ++d)
      (void)analysis::build_profile_from_dumps(rd, {d}, all, resolve);
  if (auto m = analysis::build_memory_model(rd); m) (void)analysis::memory_table(*m, analysis::MemoryQuery{});
  if (!rd.is_profile()) (void)analysis::measure_stack(rd, all);
  std::vector<analysis::StreamBalance> balance;
  for (uint32_t t : all) {
    auto b = analysis::stream_balance(rd, t);
    balance.push_back(b ? *b : analysis::StreamBalance{});
  }
  const auto states = analysis::thread_states(rd);
  const std::vector<analysis::ThreadStates> none;
  views::print_info_text(rd, balance, devnull(), states ? *states : none);
  (void)views::info_json(rd, balance, states ? *states : none);
  // The kernel's events under the call paths: waits, faults, block I/O, samples.
  if (!rd.is_profile()) {
    views::ReportOptions o;
    if (auto w = analysis::build_wait_profile(rd, all, resolve); w) (void)views::print_wait_table(rd, *w, o, devnull());
    if (auto f = analysis::build_fault_profile(rd, all, resolve); f) (void)views::print_fault_table(*f, o, devnull());
    if (auto io = analysis::build_io_profile(rd, all, resolve); io) (void)views::print_io_table(rd, *io, o, devnull());
    if (auto s = analysis::build_sample_profile(rd, all, resolve); s) {
      (void)views::print_sample_table(rd, *s, o, devnull());
      (void)views::print_call_trees(rd, *s, o, devnull());
    }
  }
}

void read_all(const uint8_t* data, size_t size) {
  set_input(data, size);
  // As info reads it: every damage listed, placeholders where records name
  // what the trace does not hold. Then as every other command: refused, or
  // read without such damage.
  auto listed = TraceReader::open(input_path(), TraceReader::Damage::kList);
  if (!listed) {
    if (listed.error().message().empty()) fail("empty error message");
    if (TraceReader::open(input_path()).ok()) fail("refused as info reads it, not otherwise");
    return;
  }
  (*listed)->verify_payloads();
  exercise(**listed);
  auto r = TraceReader::open(input_path());
  if (!r) {
    if (r.error().message().find("damaged trace") == std::string::npos) fail("refused without saying why: " + r.error().message());
    if ((*listed)->problems().empty()) fail("refused, but info lists no problem: " + r.error().message());
    return;
  }
  TraceReader& rd = **r;
  if (rd.file_size() != size) fail("file_size");
  // Metadata is all readable (strings are checked against their blocks).
  size_t text = rd.info().cwd.size() + rd.info().tool_version.size();
  for (const auto& a : rd.info().argv) text += a.size();
  for (const auto& p : rd.processes()) text += p.exe.size() + p.argv.size();
  for (const auto& m : rd.modules()) {
    text += m.path.size();
    if (m.build_id.size() > 40 || m.build_id.size() % 2) fail("build id hex");
  }
  for (const auto& t : rd.threads()) text += t.name.size();
  if (text == SIZE_MAX) fail("unreachable");
  uint64_t prev_end = 0;
  for (const BlockRef& b : rd.blocks()) {
    if (b.offset < prev_end || b.offset + sizeof(BlockHeader) + b.header.stored_size > size) fail("block bounds");
    prev_end = b.offset + sizeof(BlockHeader) + b.header.stored_size;
  }

  for (uint32_t t = 0; t < rd.threads().size(); ++t) {
    uint32_t depth = 0;
    uint64_t n = 0;
    auto st = rd.for_each_event(t, [&](const TraceEvent& e) {
      ++n;
      const auto k = static_cast<uint8_t>(e.kind);
      if (k < 1 || k > kMaxEventKind) fail("event kind " + std::to_string(k));
      if (is_entry(e.kind)) {
        if (e.depth != ++depth) fail("entry depth");
      } else if (is_exit(e.kind)) {
        if (depth == 0 || e.depth != depth) fail("exit depth");
        --depth;
      } else if (e.depth != depth) {
        fail("depth of a non-frame event");
      }
      return true;
    });
    if (!st) fail("for_each_event on a listed thread: " + st.error().message());
    // Stopping early works.
    uint64_t m = 0;
    st = rd.for_each_event(t, [&](const TraceEvent&) { return ++m < 2; });
    if (!st || m != (n < 2 ? n : 2)) fail("early stop");
  }
  if (rd.for_each_event(static_cast<uint32_t>(rd.threads().size()), [](const TraceEvent&) { return true; }).ok())
    fail("events of a thread that does not exist");
  for (const std::string& p : rd.problems())
    if (!starts_with(p, "block ") && !starts_with(p, "offset ") && !starts_with(p, "the trace has no end block"))
      fail("problem without a place: " + p);
  if (!rd.complete() && rd.problems().empty()) fail("incomplete without a problem");
  exercise(rd);
  // info finds every damage the other commands meet.
  for (const std::string& p : rd.problems())
    if (std::find((*listed)->problems().begin(), (*listed)->problems().end(), p) == (*listed)->problems().end())
      fail("a problem info does not list: " + p);
}

// Recomputes the check of every block header along the chain; false when
// nothing changed.
bool fix_checks(std::vector<uint8_t>& b) {
  if (b.size() < sizeof(FileHeader)) return false;
  FileHeader fh;
  std::memcpy(&fh, b.data(), sizeof fh);
  bool changed = false;
  if (fh.version_minor >= kTraceMinorHeaderCheck) {
    const uint32_t before = fh.check;
    seal_file_header(fh);
    if (fh.check != before) {
      std::memcpy(b.data(), &fh, sizeof fh);
      changed = true;
    }
  }
  uint64_t off = fh.header_size < sizeof fh ? sizeof fh : fh.header_size;
  while (off + sizeof(BlockHeader) <= b.size()) {
    BlockHeader h;
    std::memcpy(&h, b.data() + off, sizeof h);
    if (h.magic != kBlockMagic) break;
    const uint32_t check = header_check(&h, offsetof(BlockHeader, check));
    if (check != h.check) {
      std::memcpy(b.data() + off + offsetof(BlockHeader, check), &check, sizeof check);
      changed = true;
    }
    off += sizeof h + h.stored_size;
  }
  return changed;
}

}  // namespace

#ifdef CALLSCOPE_LIBFUZZER
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

// Half the time one block's decompressed payload is changed and sealed
// again (payload_mutation.h); else libFuzzer's own mutations of the file.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (rng() & 1) {
    std::vector<uint8_t> file(data, data + size);
    if (callscope::fuzz::mutate_payload(file, rng, LLVMFuzzerMutate) && file.size() <= max_size) {
      std::memcpy(data, file.data(), file.size());
      return file.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_all(data, size);
  std::vector<uint8_t> fixed(data, data + size);
  if (fix_checks(fixed)) read_all(fixed.data(), fixed.size());
  return 0;
}
