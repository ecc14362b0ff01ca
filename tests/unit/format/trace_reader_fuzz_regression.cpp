// The trace reader fuzz target (tests/fuzz/trace_reader_fuzz.cpp) as a plain
// regression test, no libFuzzer: runs it over the seed corpus, over seeds
// generated here with TraceWriter, and over N seeded random mutations of them.
// A failure is an abort (the target's invariants) or a sanitizer report; the
// input that caused it is then written to ./trace_reader_fuzz_failure.bin
// (needs abort_on_error=1 in ASAN_OPTIONS/UBSAN_OPTIONS, as the test sets).
//
//   trace_reader_fuzz_regression [--corpus DIR] [--mutations N] [--seed S]
//   trace_reader_fuzz_regression --write-corpus DIR    (regenerates the seeds)
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>

#include "payload_mutation.h"
#include "trace_test_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#ifdef CALLSCOPE_HAVE_ASAN
extern "C" void __sanitizer_set_death_callback(void (*)(void));
#else
// Without ASan (whose max_allocation_size_mb the test sets), a damaged size
// field asking for gigabytes fails here instead of swapping the machine.
void* operator new(size_t n) {
  if (n > (size_t{1} << 30)) {
    std::fprintf(stderr, "trace_reader_fuzz_regression: allocation of %zu bytes\n", n);
    std::abort();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
// operator new above allocates with malloc, so free is the matching release;
// GCC cannot see that through the replacement.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
#endif

namespace callscope::format {
namespace {

using Bytes = std::vector<uint8_t>;

struct Seed {
  std::string name;
  Bytes bytes;
};

// Small valid traces: compressed as the writer makes them, the same with
// uncompressed blocks, and hand-made columns of every kind.
std::vector<Seed> generated_seeds() {
  std::vector<Seed> seeds;
  test::TempDir dir;
  std::vector<std::vector<test::InEvent>> two = {test::sample_stream(0, 40), test::sample_stream(1, 25)};
  if (!test::write_small_trace(dir.file("a"), two)) std::abort();
  seeds.push_back({"small-zstd.cstrace", test::read_all(dir.file("a"))});
  seeds.push_back({"small-raw.cstrace", test::uncompress_trace(seeds.back().bytes)});

  using K = EventKind;
  std::vector<test::InEvent> kinds = {
      {K::kEntryInherited, 10, 0x7f0000001000ull, 0x7ffc00001000ull, 0},
      {K::kEntry, 12, 0x401000, 0x7ffc00000f00ull, 0},
      {K::kMark, 13, 0, 0, 77},
      {K::kExitUnwound, 14, 0, 0, 0},
      {K::kExitStray, 15, 0x402000, 0, 0},
      {K::kLost, 16, 0, 0, 1000},
      {K::kEntry, 1ull << 40, 0x401000, 0x7ffc00001100ull, 0},
      {K::kExit, (1ull << 40) + 1, 0, 0, 0},
      {K::kExitTruncated, (1ull << 40) + 2, 0, 0, 0},
  };
  if (!test::write_small_trace(dir.file("b"), {kinds}, 1)) std::abort();
  seeds.push_back({"all-kinds-raw.cstrace", test::uncompress_trace(test::read_all(dir.file("b")))});
  if (!test::write_small_trace(dir.file("c"), {}, 1)) std::abort();
  seeds.push_back({"no-threads-zstd.cstrace", test::read_all(dir.file("c"))});
  return seeds;
}

std::vector<Seed> corpus_seeds(const std::string& dir) {
  std::vector<Seed> seeds;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    std::fprintf(stderr, "cannot open corpus '%s'\n", dir.c_str());
    std::exit(2);
  }
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    seeds.push_back({e->d_name, test::read_all(dir + "/" + e->d_name)});
  }
  ::closedir(d);
  return seeds;
}

// libFuzzer-like mutations, plus structure-aware ones aimed at sizes, and
// (a third of them) changes to a decompressed payload sealed again, as a
// crafted file would be (tests/fuzz/payload_mutation.h).
Bytes mutate(const Bytes& in, std::mt19937_64& rng) {
  Bytes b = in;
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  if (rng() % 3 == 0) {
    // The payload's own bytes: a few flipped, or a varint written in place.
    auto bytes = [&](uint8_t* data, size_t size, size_t) {
      for (unsigned i = 0, n = 1 + static_cast<unsigned>(rng() % 4); i < n && size; ++i)
        data[pick(size)] ^= static_cast<uint8_t>(1u << (rng() % 8));
      return size;
    };
    if (fuzz::mutate_payload(b, rng, bytes)) return b;
  }
  const unsigned rounds = 1 + static_cast<unsigned>(rng() % 4);
  for (unsigned r = 0; r < rounds; ++r) {
    switch (rng() % 9) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1: {  // an interesting byte
        static const uint8_t v[] = {0, 1, 0x7f, 0x80, 0xff, 9, 5, 8};
        if (!b.empty()) b[pick(b.size())] = v[rng() % sizeof v];
        break;
      }
      case 2: {  // an interesting 32-bit value (counts and sizes are uint32)
        static const uint32_t v[] = {0, 1, 2, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffff0, 1u << 20, 64, 40};
        if (b.size() >= 4) {
          const uint32_t x = v[rng() % (sizeof v / 4)];
          std::memcpy(b.data() + pick(b.size() - 3), &x, 4);
        }
        break;
      }
      case 3:  // truncate
        b.resize(pick(b.size() + 1));
        break;
      case 4: {  // insert random bytes
        Bytes ins(1 + pick(16));
        for (auto& c : ins) c = static_cast<uint8_t>(rng());
        b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), ins.begin(), ins.end());
        break;
      }
      case 5: {  // erase a range
        if (b.empty()) break;
        const size_t at = pick(b.size());
        b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + pick(std::min<size_t>(64, b.size() - at) + 1)));
        break;
      }
      case 6: {  // duplicate a range
        if (b.empty()) break;
        const size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(256, b.size() - at));
        Bytes chunk(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + n));
        b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), chunk.begin(), chunk.end());
        break;
      }
      case 7: {  // a byte in a payload's first 64 bytes (column header, record table head)
        if (b.size() <= sizeof(FileHeader) + sizeof(BlockHeader)) break;
        size_t off = sizeof(FileHeader);
        std::vector<size_t> payloads;
        while (off + sizeof(BlockHeader) <= b.size()) {
          BlockHeader h;
          std::memcpy(&h, b.data() + off, sizeof h);
          if (h.magic != kBlockMagic) break;
          payloads.push_back(off + sizeof h);
          off += sizeof h + h.stored_size;
        }
        if (payloads.empty()) break;
        const size_t at = payloads[pick(payloads.size())] + pick(64);
        if (at < b.size()) b[at] = static_cast<uint8_t>(rng());
        break;
      }
      default: {  // a random varint in place
        if (b.empty()) break;
        Bytes v;
        put_varint(v, rng() >> (rng() % 64));
        const size_t at = pick(b.size());
        for (size_t i = 0; i < v.size() && at + i < b.size(); ++i) b[at + i] = v[i];
        break;
      }
    }
  }
  return b;
}

// The input being run, saved when the process dies (abort or sanitizer).
const Bytes* g_current = nullptr;
const char* g_current_name = "";

void save_current() {
  if (!g_current) return;
  const int fd = ::open("trace_reader_fuzz_failure.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
  (void)ignored;
  ::close(fd);
  static const char msg[] = "trace_reader_fuzz_regression: failing input written to trace_reader_fuzz_failure.bin (";
  ignored = ::write(2, msg, sizeof msg - 1);
  ignored = ::write(2, g_current_name, std::strlen(g_current_name));
  ignored = ::write(2, ")\n", 2);
}

void on_signal(int sig) {
  save_current();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void run(const Bytes& b, const char* name) {
  g_current = &b;
  g_current_name = name;
  LLVMFuzzerTestOneInput(b.data(), b.size());
  g_current = nullptr;
}

}  // namespace
}  // namespace callscope::format

int main(int argc, char** argv) {
  using namespace callscope::format;
  std::string corpus, write_corpus;
  unsigned long mutations = 2000, seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--corpus") corpus = argv[i + 1];
    else if (a == "--mutations") mutations = std::strtoul(argv[i + 1], nullptr, 10);
    else if (a == "--seed") seed = std::strtoul(argv[i + 1], nullptr, 10);
    else if (a == "--write-corpus") write_corpus = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::vector<Seed> seeds = generated_seeds();
  if (!write_corpus.empty()) {
    for (const Seed& s : seeds) test::write_all(write_corpus + "/" + s.name, s.bytes);
    std::printf("wrote %zu seeds to %s\n", seeds.size(), write_corpus.c_str());
    return 0;
  }
  if (!corpus.empty()) {
    auto more = corpus_seeds(corpus);
    seeds.insert(seeds.end(), more.begin(), more.end());
  }
#ifdef CALLSCOPE_HAVE_ASAN
  __sanitizer_set_death_callback(save_current);
#endif
  ::signal(SIGABRT, on_signal);
  ::signal(SIGSEGV, on_signal);
  for (const Seed& s : seeds) {
    std::printf("seed %s (%zu bytes)\n", s.name.c_str(), s.bytes.size());
    std::fflush(stdout);
    run(s.bytes, s.name.c_str());
  }
  std::mt19937_64 rng(seed);
  for (unsigned long i = 0; i < mutations; ++i) {
    const Seed& s = seeds[rng() % seeds.size()];
    const Bytes m = mutate(s.bytes, rng);
    const std::string name = "mutation " + std::to_string(i) + " of " + s.name;
    run(m, name.c_str());
  }
  std::printf("ok: %zu seeds, %lu mutations (seed %lu)\n", seeds.size(), mutations, seed);
  return 0;
}
