// Each refusal of attach, from the facts that cause it (the decision alone:
// tests/e2e/inject_test.cpp reads the facts of real processes).
#include "inject/attachable.h"

#include <elf.h>
#include <gtest/gtest.h>

namespace callscope::inject {
namespace {

// A process callscope may attach to: ours, dynamic, x86-64, glibc.
ProcessFacts attachable() {
  ProcessFacts f;
  f.pid = 4242;
  f.exists = true;
  f.name = "server";
  f.uid = f.our_uid = 1000;
  f.elf_class = ELFCLASS64;
  f.elf_machine = EM_X86_64;
  f.dynamic = true;
  f.libc_mapped = true;
  return f;
}

void expect_refused(const ProcessFacts& f, const std::string& part1, const std::string& part2) {
  const auto why = refusal(f);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find(part1), std::string::npos) << *why;
  EXPECT_NE(why->find(part2), std::string::npos) << *why;
}

TEST(Attachable, AnOrdinaryProcessOfOursIsAttachable) { EXPECT_FALSE(refusal(attachable())); }

TEST(Attachable, MissingAndEndedProcesses) {
  ProcessFacts f = attachable();
  f.exists = false;
  expect_refused(f, "no process 4242", "ended");
  f = attachable();
  f.zombie = true;
  expect_refused(f, "process 4242 (server) has ended", "zombie");
}

TEST(Attachable, AnotherUsersProcessNeedsThePrivilege) {
  ProcessFacts f = attachable();
  f.uid = 0;
  expect_refused(f, "belongs to user 0, not to you (1000)", "CAP_SYS_PTRACE");
  f.privileged = true;
  EXPECT_FALSE(refusal(f));
}

TEST(Attachable, ANonDumpableProcessNeedsThePrivilege) {
  ProcessFacts f = attachable();
  f.proc_owned_by_root = true;
  expect_refused(f, "not dumpable", "PR_SET_DUMPABLE");
  f.privileged = true;
  EXPECT_FALSE(refusal(f));
}

TEST(Attachable, YamaScopes) {
  ProcessFacts f = attachable();
  f.yama_scope = 1;
  expect_refused(f, "ptrace_scope is 1", "kernel.yama.ptrace_scope=0");
  f.our_descendant = true;
  EXPECT_FALSE(refusal(f));
  f.yama_scope = 2;
  expect_refused(f, "ptrace_scope is 2", "CAP_SYS_PTRACE");
  f.privileged = true;
  EXPECT_FALSE(refusal(f));
  f.yama_scope = 3;
  expect_refused(f, "ptrace_scope is 3", "callscope record");  // not even with the privilege
  f.yama_scope = 0;
  f.privileged = false;
  f.our_descendant = false;
  EXPECT_FALSE(refusal(f));
}

TEST(Attachable, TracedStoppedForeignAndStaticPrograms) {
  ProcessFacts f = attachable();
  f.tracer = 77;
  expect_refused(f, "already traced by process 77", "detach that first");
  f = attachable();
  f.stopped = true;
  expect_refused(f, "is stopped", "kill -CONT 4242");
  f = attachable();
  f.elf_class = ELFCLASS32;
  f.elf_machine = EM_386;
  expect_refused(f, "not an x86-64 program", "x86-64 programs only");
  f = attachable();
  f.elf_machine = EM_AARCH64;
  expect_refused(f, "not an x86-64 program", "x86-64 programs only");
  f = attachable();
  f.dynamic = false;
  expect_refused(f, "statically linked", "callscope record");
  f = attachable();
  f.libc_mapped = false;
  expect_refused(f, "does not use glibc", "libc.so.6");
  f = attachable();
  f.exe_error = "Permission denied";
  expect_refused(f, "cannot read the executable", "Permission denied");
}

}  // namespace
}  // namespace callscope::inject
