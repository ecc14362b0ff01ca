// terminal_safe (common/output_format.h): what the text views print of names
// from traces and binaries; open_regular_file and read_file_bytes
// (common/files.h): every reader refuses FIFOs, devices and directories
// without blocking.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/config.h"
#include "common/files.h"
#include "common/output_format.h"

namespace callscope {
namespace {

TEST(TerminalSafe, PrintableAndUtf8PassUnchanged) {
  EXPECT_EQ(terminal_safe("std::vector<int>::push_back(int const&)"), "std::vector<int>::push_back(int const&)");
  EXPECT_EQ(terminal_safe("wörker-線程 🧵"), "wörker-線程 🧵");
  EXPECT_EQ(terminal_safe(""), "");
  EXPECT_EQ(terminal_safe("C:\\path"), "C:\\path");  // a backslash is not a control character
}

TEST(TerminalSafe, ControlCharactersAreEscaped) {
  // The thread name that retitled and cleared the terminal of whoever ran `info`.
  EXPECT_EQ(terminal_safe("\x1b]0;PWN\a\x1b[2J"), "\\x1b]0;PWN\\x07\\x1b[2J");
  EXPECT_EQ(terminal_safe("a\tb\nc\rd"), "a\\tb\\nc\\rd");
  EXPECT_EQ(terminal_safe(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(terminal_safe("\x7f"), "\\x7f");
  // C1 controls: as UTF-8 (U+009B, CSI) and as raw bytes (8-bit terminals).
  EXPECT_EQ(terminal_safe("\xc2\x9b" "2J"), "\\xc2\\x9b2J");
  EXPECT_EQ(terminal_safe("\x9b" "2J"), "\\x9b2J");
}

TEST(TerminalSafe, LinesKeepTheirNewlinesAndTabsOnly) {
  // A multi-line error (dtrace's "identifier redeclared" and its detail).
  EXPECT_EQ(terminal_safe_lines("redeclared: x\n\t current: int\n"), "redeclared: x\n\t current: int\n");
  EXPECT_EQ(terminal_safe_lines("a\x1b[2J\nb\r\tc"), "a\\x1b[2J\nb\\r\tc");
  EXPECT_EQ(terminal_safe_lines("w\xc3\xb6r\nk"), "w\xc3\xb6r\nk");
}

TEST(TerminalSafe, InvalidUtf8IsEscaped) {
  EXPECT_EQ(terminal_safe("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(terminal_safe("\xc3"), "\\xc3");                  // cut short
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");         // overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80"); // a surrogate
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(TerminalSafe, ASecondPassChangesNothing) {
  const std::string once = terminal_safe("\x1b[31mred\x1b[0m \xff\n");
  EXPECT_EQ(terminal_safe(once), once);
  for (char c : once) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << once;
}

class OddFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/callscope-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fifo_ = dir_ + "/pipe";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    ::alarm(20);  // a reader that blocks on the FIFO fails the test instead of hanging it
  }
  void TearDown() override {
    ::alarm(0);
    std::filesystem::remove_all(dir_);
  }
  std::string dir_, fifo_;
};

TEST_F(OddFiles, FifoWithoutWriterIsRefusedAtOnce) {
  auto f = open_regular_file(fifo_);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message(), "'" + fifo_ +
                                     "' is a FIFO (named pipe), not a regular file: callscope reads regular files "
                                     "only (save what it carries to a file first)");
  auto b = read_file_bytes(fifo_);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("is a FIFO"), std::string::npos) << b.error().message();
}

TEST_F(OddFiles, ConfigFileThatIsAFifoOrADirectory) {
  auto c = config::load_file(fifo_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("cannot read config file '" + fifo_ + "': '" + fifo_ + "' is a FIFO"), std::string::npos)
      << c.error().message();
  c = config::load_file(dir_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("is a directory, not a regular file"), std::string::npos) << c.error().message();
}

TEST_F(OddFiles, DevicesSocketsAndDirectories) {
  auto f = open_regular_file("/dev/null");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("'/dev/null' is a character device"), std::string::npos);
  f = open_regular_file(dir_, "a raw session? try 'callscope finish DIR'");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message(), "'" + dir_ + "' is a directory, not a regular file (a raw session? try 'callscope finish DIR')");
  f = open_regular_file(dir_ + "/missing");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("No such file"), std::string::npos);
}

TEST_F(OddFiles, RegularFilesOpen) {
  const std::string p = dir_ + "/data";
  ASSERT_TRUE(write_file_bytes(p, "hello", 5).ok());
  auto f = open_regular_file(p);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->size, 5u);
  EXPECT_EQ(::fcntl(f->fd, F_GETFL) & O_NONBLOCK, 0);
  ::close(f->fd);
  auto b = read_file_bytes(p);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(std::string(b->begin(), b->end()), "hello");
}

}  // namespace
}  // namespace callscope
