// How fast the symbolizer resolves distinct addresses: a trace whose module
// map holds one shared library (default: Debian's libLLVM-14, ~100 MB), and N
// distinct addresses spread over its code, each looked up once.
//   symbolize_bench [LIBRARY] [N]
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "format/trace_writer.h"
#include "symbolize/symbolizer.h"

namespace fmt = callscope::format;

int main(int argc, char** argv) {
  const std::string lib = argc > 1 ? argv[1] : "/usr/lib/llvm-14/lib/libLLVM-14.so.1";
  const uint64_t n = argc > 2 ? std::stoull(argv[2]) : 1000000;
  // The library's executable range, from its program headers.
  int fd = ::open(lib.c_str(), O_RDONLY);
  if (fd < 0) {
    std::perror(lib.c_str());
    return 1;
  }
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t phnum = 0;
  elf_getphdrnum(elf, &phnum);
  uint64_t text_lo = 0, text_hi = 0, low = ~0ull, high = 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
    low = std::min<uint64_t>(low, ph.p_vaddr);
    high = std::max<uint64_t>(high, ph.p_vaddr + ph.p_memsz);
    if (ph.p_flags & PF_X) text_lo = ph.p_vaddr, text_hi = ph.p_vaddr + ph.p_memsz;
  }
  elf_end(elf);
  ::close(fd);
  const uint64_t bias = 0x7f0000000000;

  const std::string path = (std::filesystem::temp_directory_path() / "symbolize_bench.trace").string();
  std::filesystem::remove(path);
  fmt::FileHeader fh{};
  std::memcpy(fh.magic, fmt::kTraceMagic, sizeof fh.magic);
  fh.version_major = fmt::kTraceVersionMajor;
  fh.header_size = sizeof fh;
  fh.ticks_per_ns = 1.0;
  auto w = fmt::TraceWriter::create(path, fh, 1);
  fmt::StringTable ps, ms;
  fmt::ProcessRecord p{};
  p.exe = ps.add(lib);
  fmt::ModuleRecord m{};
  m.load_bias = bias;
  m.low = bias + low;
  m.high = bias + high;
  m.path = ms.add(lib);
  (void)(*w)->write_records(fmt::BlockType::kProcesses, std::vector<fmt::ProcessRecord>{p}, ps);
  (void)(*w)->write_records(fmt::BlockType::kModules, std::vector<fmt::ModuleRecord>{m}, ms);
  (void)(*w)->finish(fmt::EndRecord{0, 3});
  auto trace = fmt::TraceReader::open(path);

  callscope::symbolize::Symbolizer sym(**trace);
  const uint64_t step = std::max<uint64_t>(1, (text_hi - text_lo) / n);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t named = 0, located = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const auto& s = sym.lookup(0, bias + text_lo + i * step);
    named += !s.function.empty();
    located += s.line > 0;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %llu distinct addresses in %.2f s (%.0f per s); %llu named, %llu with file:line\n", lib.c_str(),
              static_cast<unsigned long long>(n), secs, static_cast<double>(n) / secs,
              static_cast<unsigned long long>(named), static_cast<unsigned long long>(located));
  std::filesystem::remove(path);
  return 0;
}
