// src/format/ctl_dir.h: the walk that opens the control directory refuses
// every path another user could steer (a parent owned by someone else or
// writable by others, a symbolic link on the way owned by someone else, a
// last component that is a link or not ours alone) and accepts the safe
// ones (sticky /tmp, our own links, relative paths, "..").
#include "format/ctl_dir.h"

#include <gtest/gtest.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace callscope::ctldir {
namespace {

constexpr uid_t kNobody = 65534;

class CtlDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Under /tmp itself (root's, sticky), not $TMPDIR: the walk checks every
    // parent, and the test must not depend on where $TMPDIR points.
    char tmpl[] = "/tmp/callscope-ctldir.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    ::nftw(
        base_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p), 0; }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  std::string mkdir(const std::string& name, mode_t mode) {
    const std::string p = base_ + "/" + name;
    EXPECT_EQ(::mkdir(p.c_str(), 0700), 0) << p;
    EXPECT_EQ(::chmod(p.c_str(), mode), 0) << p;
    return p;
  }
  // open_private_dir: the descriptor's inode (0 when refused) and the reason.
  struct Opened {
    ino_t ino = 0;
    std::string why;
  };
  Opened open(const std::string& path, bool create = false) {
    auto scratch = std::make_unique<Scratch>();
    std::string buf(8192, '\0');
    Text why(buf.data(), buf.size());
    Opened o;
    const int fd = open_private_dir(path.c_str(), create, ::geteuid(), *scratch, why);
    struct stat st;
    if (fd >= 0) {
      EXPECT_EQ(::fstat(fd, &st), 0);
      o.ino = st.st_ino;
      ::close(fd);
    }
    o.why = why.c_str();
    return o;
  }
  static ino_t ino(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  }
  std::string base_;
};

TEST_F(CtlDirTest, MakesAMissingDirectoryPrivate) {
  const std::string dir = base_ + "/ctl";
  const Opened o = open(dir, true);
  EXPECT_EQ(o.why, "");
  ASSERT_NE(o.ino, 0u);
  EXPECT_EQ(o.ino, ino(dir));
  struct stat st;
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // Without `create`, a missing directory is an error.
  const Opened missing = open(base_ + "/none");
  EXPECT_EQ(missing.ino, 0u);
  EXPECT_EQ(missing.why, "cannot use " + base_ + "/none: no such file or directory");
}

TEST_F(CtlDirTest, TheDirectoryItselfMustBeOursAlone) {
  const std::string open_dir = mkdir("open", 0755);
  EXPECT_EQ(open(open_dir).why, open_dir + " is open to other users (mode 0755; it must be 0700)");
  const std::string good = mkdir("good", 0700);
  const std::string link = base_ + "/link";
  ASSERT_EQ(::symlink(good.c_str(), link.c_str()), 0);
  EXPECT_EQ(open(link, true).why, link + " is a symbolic link");
  const std::string file = base_ + "/file";
  ::close(::creat(file.c_str(), 0600));
  EXPECT_EQ(open(file, true).why, file + " is not a directory");
}

// The case without a second user: a parent anyone may write to
// (no sticky bit) lets anyone swap the directory for a link.
TEST_F(CtlDirTest, AParentWritableByOthersIsRefused) {
  const std::string att = mkdir("att", 0777);
  const std::string ctl = att + "/ctl";
  const Opened o = open(ctl, true);
  EXPECT_EQ(o.ino, 0u);
  EXPECT_EQ(o.why, ctl + ": " + att +
                       " is writable by other users (mode 0777, not sticky), so another user could replace what it "
                       "holds; use a directory whose every parent belongs to root or to you and is not writable by "
                       "others");
  EXPECT_NE(::access(ctl.c_str(), F_OK), 0) << "made a directory in an unsafe parent";
  // Group-writable is as bad.
  const std::string grp = mkdir("grp", 0770);
  EXPECT_NE(open(grp + "/ctl", true).why.find(" is writable by other users (mode 0770"), std::string::npos);
  // Sticky, as /tmp: others cannot rename or remove what we made there.
  const std::string sticky = mkdir("sticky", 01777);
  const Opened ok = open(sticky + "/ctl", true);
  EXPECT_EQ(ok.why, "");
  EXPECT_NE(ok.ino, 0u);
}

TEST_F(CtlDirTest, OurOwnLinksOnTheWayAreFollowed) {
  const std::string real = mkdir("real", 0755);
  ASSERT_EQ(::symlink(real.c_str(), (base_ + "/abs").c_str()), 0);
  ASSERT_EQ(::symlink("real", (base_ + "/rel").c_str()), 0);
  const Opened a = open(base_ + "/abs/ctl", true);
  EXPECT_EQ(a.why, "");
  EXPECT_EQ(a.ino, ino(real + "/ctl"));
  const Opened r = open(base_ + "/rel/ctl");
  EXPECT_EQ(r.why, "");
  EXPECT_EQ(r.ino, a.ino);
  // "..", "." and repeated slashes.
  EXPECT_EQ(open(base_ + "/rel/../real/./ctl//").ino, a.ino);
  // A relative path is taken from the working directory.
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(::chdir(real.c_str()), 0);
  const Opened rel = open("ctl");
  ASSERT_EQ(::chdir(cwd), 0);
  EXPECT_EQ(rel.why, "");
  EXPECT_EQ(rel.ino, a.ino);
  // A loop of links ends.
  ASSERT_EQ(::symlink("loop", (base_ + "/loop").c_str()), 0);
  EXPECT_EQ(open(base_ + "/loop/ctl").why, "cannot use " + base_ + "/loop/ctl: too many symbolic links");
}

TEST_F(CtlDirTest, ForeignOwnersOnTheWayAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  // The case: CALLSCOPE_CTL_DIR=/tmp/att/ctl with /tmp/att another
  // user's: they can swap ctl for a link at any time.
  const std::string att = mkdir("att", 0755);
  const std::string ctl = mkdir("att/ctl", 0700);
  ASSERT_EQ(::chown(att.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(open(ctl).why, ctl + ": " + att +
                               " is owned by uid 65534, not by root or by us (uid 0), so another user could replace "
                               "what it holds; use a directory whose every parent belongs to root or to you and is "
                               "not writable by others");
  // The directory itself another user's.
  const std::string theirs = mkdir("theirs", 0700);
  ASSERT_EQ(::chown(theirs.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(open(theirs, true).why, theirs + " is owned by uid 65534, not by us (uid 0)");
  // A link on the way that another user owns (in a sticky directory they
  // may write to): they can point it anywhere.
  const std::string sticky = mkdir("sticky", 01777);
  const std::string real = mkdir("real", 0755);
  const std::string link = sticky + "/link";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(open(link + "/ctl", true).why,
            link + "/ctl: " + link + " is a symbolic link owned by uid 65534, not by root or by us (uid 0)");
  EXPECT_NE(::access((real + "/ctl").c_str(), F_OK), 0);
}

TEST(CtlDirCandidates, ExplicitDirectoryElseTmpThenPrivatePlaces) {
  auto c = std::make_unique<Candidates>();
  const char* saved[3] = {std::getenv("CALLSCOPE_CTL_DIR"), std::getenv("XDG_RUNTIME_DIR"), std::getenv("HOME")};
  const std::string keep[3] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "", saved[2] ? saved[2] : ""};
  ::setenv("CALLSCOPE_CTL_DIR", "/some/dir", 1);
  candidates(*c, 1000, [](const char* n) -> const char* { return ::getenv(n); });
  ASSERT_EQ(c->count, 1);
  EXPECT_TRUE(c->explicit_dir);
  EXPECT_STREQ(c->path[0], "/some/dir");
  ::unsetenv("CALLSCOPE_CTL_DIR");
  ::setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
  ::setenv("HOME", "/home/me", 1);
  candidates(*c, 1000, [](const char* n) -> const char* { return ::getenv(n); });
  ASSERT_EQ(c->count, 3);
  EXPECT_FALSE(c->explicit_dir);
  EXPECT_STREQ(c->path[0], "/tmp/callscope-1000");
  EXPECT_STREQ(c->path[1], "/run/user/1000/callscope");
  EXPECT_STREQ(c->path[2], "/home/me/.callscope-ctl");
  // Relative values name a different place in every working directory.
  ::setenv("XDG_RUNTIME_DIR", "run", 1);
  ::unsetenv("HOME");
  candidates(*c, 1000, [](const char* n) -> const char* { return ::getenv(n); });
  EXPECT_EQ(c->count, 1);
  const char* names[3] = {"CALLSCOPE_CTL_DIR", "XDG_RUNTIME_DIR", "HOME"};
  for (int i = 0; i < 3; ++i) {
    if (saved[i])
      ::setenv(names[i], keep[i].c_str(), 1);
    else
      ::unsetenv(names[i]);
  }
}

}  // namespace
}  // namespace callscope::ctldir
