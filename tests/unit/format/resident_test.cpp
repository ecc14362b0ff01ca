// The resident set by module (format/resident.h): /proc/PID/smaps summed per
// file and kind, and the samples' text form read back (a sample cut short by
// a crash is left out).
#include "format/resident.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace callscope::format {
namespace {

constexpr const char* kSmaps =
    "55d0c0000000-55d0c0002000 r--p 00000000 fe:00 1234                       /usr/bin/app\n"
    "Size:                  8 kB\n"
    "Rss:                   8 kB\n"
    "Pss:                   4 kB\n"
    "55d0c0002000-55d0c0008000 r-xp 00002000 fe:00 1234                       /usr/bin/app\n"
    "Rss:                  20 kB\n"
    "Pss:                  20 kB\n"
    "55d0c0008000-55d0c000a000 rw-p 00008000 fe:00 1234                       /usr/bin/app\n"
    "Rss:                   4 kB\n"
    "Pss:                   4 kB\n"
    "55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]\n"
    "Rss:                  12 kB\n"
    "Pss:                  12 kB\n"
    "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
    "Rss:                 100 kB\n"
    "Pss:                 100 kB\n"
    "7f0000100000-7f0000200000 rw-p 00000000 00:00 0 \n"
    "Rss:                  28 kB\n"
    "Pss:                  28 kB\n"
    "7f0001000000-7f0001001000 r-xp 00000000 fe:00 99   /opt/my lib/libx.so (deleted)\n"
    "Rss:                   4 kB\n"
    "Pss:                   2 kB\n"
    "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
    "Rss:                  16 kB\n"
    "Pss:                  16 kB\n"
    "7ffc10000000-7ffc10002000 r-xp 00000000 00:00 0                          [vdso]\n"
    "Rss:                   4 kB\n"
    "Pss:                   0 kB\n"
    "VmFlags: rd ex mr mw me de sd\n";

const ResidentEntry* find(const std::vector<ResidentEntry>& v, ResidentKind k, const std::string& path) {
  for (const ResidentEntry& e : v)
    if (e.kind == k && e.path == path) return &e;
  return nullptr;
}

TEST(Resident, SmapsSummedPerFileAndKind) {
  const auto v = parse_smaps(kSmaps);
  const ResidentEntry* data = find(v, ResidentKind::kData, "/usr/bin/app");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->rss_kb, 12u);  // r-- and rw- mappings of the file
  EXPECT_EQ(data->pss_kb, 8u);
  const ResidentEntry* code = find(v, ResidentKind::kCode, "/usr/bin/app");
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->rss_kb, 20u);
  const ResidentEntry* anon = find(v, ResidentKind::kAnon, "");
  ASSERT_NE(anon, nullptr);
  EXPECT_EQ(anon->rss_kb, 128u);  // both anonymous mappings
  EXPECT_EQ(find(v, ResidentKind::kHeap, "[heap]")->rss_kb, 12u);
  EXPECT_EQ(find(v, ResidentKind::kStack, "[stack]")->rss_kb, 16u);
  EXPECT_EQ(find(v, ResidentKind::kOther, "[vdso]")->pss_kb, 0u);
  // A path with a space, its file deleted since it was mapped.
  const ResidentEntry* lib = find(v, ResidentKind::kCode, "/opt/my lib/libx.so");
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(lib->pss_kb, 2u);
  EXPECT_EQ(v.size(), 7u);
}

TEST(Resident, SamplesReadBackAndACutOneLeftOut) {
  ResidentSample a;
  a.mono_ns = 123456789;
  a.reason = ResidentReason::kDlopen;
  a.entries = parse_smaps(kSmaps);
  ResidentSample b;
  b.mono_ns = 223456789;
  b.reason = ResidentReason::kExit;
  b.entries = {{ResidentKind::kAnon, 5, 6, ""}};
  std::string text = format_resident_sample(a) + format_resident_sample(b);
  auto back = parse_resident_samples(text);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].mono_ns, 123456789u);
  EXPECT_EQ(back[0].reason, ResidentReason::kDlopen);
  ASSERT_EQ(back[0].entries.size(), a.entries.size());
  EXPECT_NE(find(back[0].entries, ResidentKind::kCode, "/opt/my lib/libx.so"), nullptr);
  EXPECT_EQ(back[1].entries[0].pss_kb, 6u);
  // The recorder killed in the middle of a line: that line is left out.
  text.resize(text.size() - 2);
  back = parse_resident_samples(text);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[1].entries.empty());
  EXPECT_TRUE(parse_resident_samples("sample x exit\n").empty());
  EXPECT_TRUE(parse_resident_samples("code 1 2 /a\n").empty());  // no sample line first
}

TEST(Resident, OurOwnProcess) {
  auto v = read_smaps(static_cast<int>(::getpid()));
  ASSERT_TRUE(v.ok()) << v.error().message();
  uint64_t code = 0;
  for (const ResidentEntry& e : *v)
    if (e.kind == ResidentKind::kCode) code += e.rss_kb;
  EXPECT_GT(code, 0u);
  EXPECT_FALSE(read_smaps(999999999).ok());
}

}  // namespace
}  // namespace callscope::format
