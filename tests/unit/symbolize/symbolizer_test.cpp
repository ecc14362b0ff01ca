// The symbolizer on a trace whose module map is this test program itself:
// names (demangled or not), file:line, an address outside any function, a
// module whose build-id no longer matches, and a module that is gone.
#include "symbolize/symbolizer.h"

#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "format/trace_writer.h"
#include "../format/trace_test_util.h"

namespace callscope::symbolize {
namespace {

namespace fmt = callscope::format;

__attribute__((noinline)) int symbolizer_probe_function(int x) { return x * 3 + 1; }

namespace probe_ns {
struct Widget {
  __attribute__((noinline)) static int method(int x) { return x + 7; }
};
}  // namespace probe_ns

struct Self {
  uint64_t bias = 0, low = ~0ull, high = 0;
  std::string build_id;
};

Self self_module() {
  Self s;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        if (info->dlpi_name && info->dlpi_name[0]) return 0;  // the main program only
        auto* self = static_cast<Self*>(arg);
        self->bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          self->low = std::min<uint64_t>(self->low, info->dlpi_addr + ph.p_vaddr);
          self->high = std::max<uint64_t>(self->high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        return 1;
      },
      &s);
  return s;
}

class SymbolizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("callscope-sym-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A trace with one process whose modules are this program (optionally with
  // a wrong build-id) and a file that does not exist.
  std::unique_ptr<fmt::TraceReader> make_trace(bool wrong_build_id) {
    const std::string path = (dir_ / "t.trace").string();
    std::filesystem::remove(path);
    auto w = fmt::TraceWriter::create(path, fmt::test::make_file_header(), 1);
    EXPECT_TRUE(w.ok());
    const Self self = self_module();
    fmt::StringTable ps, ms;
    fmt::ProcessRecord p{};
    p.pid = 1;
    p.exe = ps.add("/proc/self/exe");
    fmt::ModuleRecord m{};
    m.load_bias = self.bias;
    m.low = self.low;
    m.high = self.high;
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    m.path = ms.add(exe);
    if (wrong_build_id) {
      m.build_id_len = 20;
      std::memset(m.build_id, 0xab, 20);
    }
    fmt::ModuleRecord gone{};
    gone.low = 0x10000;
    gone.high = 0x20000;
    gone.load_bias = 0x10000;
    gone.path = ms.add("/nonexistent/libgone.so");
    EXPECT_TRUE((*w)->write_records(fmt::BlockType::kProcesses, std::vector<fmt::ProcessRecord>{p}, ps).ok());
    EXPECT_TRUE((*w)->write_records(fmt::BlockType::kModules, std::vector<fmt::ModuleRecord>{m, gone}, ms).ok());
    EXPECT_TRUE((*w)->finish(fmt::EndRecord{0, 3}).ok());
    auto r = fmt::TraceReader::open(path);
    EXPECT_TRUE(r.ok());
    return std::move(*r);
  }
  std::filesystem::path dir_;
};

TEST_F(SymbolizerTest, NamesAndSourceLines) {
  auto trace = make_trace(false);
  Symbolizer sym(*trace);
  const auto addr = reinterpret_cast<uint64_t>(&symbolizer_probe_function);
  const Symbol& s = sym.lookup(0, addr);
  EXPECT_NE(s.function.find("symbolizer_probe_function"), std::string::npos) << s.display();
  EXPECT_NE(s.file.find("symbolizer_test.cpp"), std::string::npos) << s.location();
  EXPECT_GT(s.line, 0);
  EXPECT_EQ(s.offset, addr - self_module().bias);
  const Symbol& m = sym.lookup(0, reinterpret_cast<uint64_t>(&probe_ns::Widget::method));
  EXPECT_EQ(m.function, "callscope::symbolize::(anonymous namespace)::probe_ns::Widget::method(int)");
  EXPECT_TRUE(sym.warnings().size() == 1) << "only the missing module is reported";
}

TEST_F(SymbolizerTest, MangledNamesOnRequest) {
  auto trace = make_trace(false);
  Symbolizer sym(*trace, {false});
  const Symbol& m = sym.lookup(0, reinterpret_cast<uint64_t>(&probe_ns::Widget::method));
  EXPECT_EQ(m.function.rfind("_ZN", 0), 0u) << m.function;
}

TEST_F(SymbolizerTest, ChangedBinaryIsReportedAndShownAsOffsets) {
  auto trace = make_trace(true);
  Symbolizer sym(*trace);
  const auto addr = reinterpret_cast<uint64_t>(&symbolizer_probe_function);
  const Symbol& s = sym.lookup(0, addr);
  EXPECT_TRUE(s.function.empty());
  EXPECT_EQ(s.display(), s.module + "+0x" + [&] {
    char b[32];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(addr - self_module().bias));
    return std::string(b);
  }());
  bool said = false;
  for (const auto& w : sym.warnings()) said |= w.find("has changed since the recording") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(SymbolizerTest, MissingModuleAndUnmappedAddress) {
  auto trace = make_trace(false);
  Symbolizer sym(*trace);
  EXPECT_EQ(sym.lookup(0, 0x10040).display(), "libgone.so+0x40");
  EXPECT_EQ(sym.lookup(0, 0x5).display(), "0x5");
  bool said = false;
  for (const auto& w : sym.warnings()) said |= w.find("'/nonexistent/libgone.so' is gone") != std::string::npos;
  EXPECT_TRUE(said);
}

// Over this program's code, libc.so.6 was loaded in between (loads of this
// program from tick 10 to 100 and from 300 on, libc's from 200 to 290):
// each address resolves in the module loaded at its time.
TEST_F(SymbolizerTest, ModulesLoadedAtTheSameAddressAtDifferentTimes) {
  struct Libc {
    std::string path;
    uint64_t bias = 0, low = ~0ull, high = 0;
  } libc;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        auto* l = static_cast<Libc*>(arg);
        if (!info->dlpi_name || !std::strstr(info->dlpi_name, "libc.so")) return 0;
        l->path = info->dlpi_name;
        l->bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          l->low = std::min<uint64_t>(l->low, info->dlpi_addr + ph.p_vaddr);
          l->high = std::max<uint64_t>(l->high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        return 1;
      },
      &libc);
  ASSERT_FALSE(libc.path.empty());
  const std::string path = (dir_ / "t.trace").string();
  auto w = fmt::TraceWriter::create(path, fmt::test::make_file_header(), 1);
  ASSERT_TRUE(w.ok());
  const Self self = self_module();
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  fmt::StringTable ps, ms;
  fmt::ProcessRecord p{};
  p.pid = 1;
  p.exe = ps.add(exe);
  auto load = [&](const std::string& file, uint64_t bias, uint64_t low, uint64_t high, uint64_t from, uint64_t to) {
    fmt::ModuleRecord m{};
    m.load_bias = bias;
    m.low = low;
    m.high = high;
    m.load_tick = from;
    if (to) {
      m.unload_tick = to;
      m.flags = fmt::kModuleUnloaded;
    }
    m.path = ms.add(file);
    return m;
  };
  // libc moved so that it starts at the page of the probe function.
  const auto addr = reinterpret_cast<uint64_t>(&symbolizer_probe_function);
  const uint64_t libc_low = addr & ~uint64_t{0xfff};
  const uint64_t libc_bias = libc_low - (libc.low - libc.bias);
  const std::vector<fmt::ModuleRecord> mods = {
      load(exe, self.bias, self.low, self.high, 10, 100),
      load(libc.path, libc_bias, libc_low, libc_low + (libc.high - libc.low), 200, 290),
      load(exe, self.bias, self.low, self.high, 300, 0),
  };
  ASSERT_TRUE((*w)->write_records(fmt::BlockType::kProcesses, std::vector<fmt::ProcessRecord>{p}, ps).ok());
  ASSERT_TRUE((*w)->write_records(fmt::BlockType::kModules, mods, ms).ok());
  ASSERT_TRUE((*w)->finish(fmt::EndRecord{0, 3}).ok());
  auto trace = fmt::TraceReader::open(path);
  ASSERT_TRUE(trace.ok());

  Symbolizer sym(**trace);
  EXPECT_NE(sym.lookup(0, addr, 50).function.find("symbolizer_probe_function"), std::string::npos);
  EXPECT_NE(sym.lookup(0, addr, 5).function.find("symbolizer_probe_function"), std::string::npos) << "before the first load";
  const Symbol& in_libc = sym.lookup(0, addr, 250);
  EXPECT_EQ(in_libc.module, "libc.so.6");
  EXPECT_EQ(in_libc.offset, addr - libc_bias);
  EXPECT_EQ(in_libc.function.find("symbolizer_probe_function"), std::string::npos) << in_libc.function;
  EXPECT_NE(sym.lookup(0, addr, 350).function.find("symbolizer_probe_function"), std::string::npos);
  // Without a time: the module with a function that starts there.
  EXPECT_NE(sym.lookup(0, addr).function.find("symbolizer_probe_function"), std::string::npos);
  for (const auto& warning : sym.warnings()) EXPECT_EQ(warning.find("overlaps"), std::string::npos) << warning;
  EXPECT_TRUE(sym.modules().reused(0, addr));
  EXPECT_EQ(sym.modules().covering(0, addr).size(), 3u);
  EXPECT_FALSE(sym.modules().reused(0, std::max(self.high, libc_low + (libc.high - libc.low))));
}

}  // namespace
}  // namespace callscope::symbolize
