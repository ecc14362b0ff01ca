// Whether callscope may attach to a process, and if not, why and what to do
// about it (callscope attach, issue 15). The facts are read from /proc and
// the executable; the decision is a function of them alone, so that each
// refusal is tested without the system it needs.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace callscope::inject {

struct ProcessFacts {
  pid_t pid = 0;
  bool exists = false;
  std::string name;              // its comm
  uid_t uid = 0;                 // the process's real user
  uid_t our_uid = 0;             // ours (effective)
  bool privileged = false;       // we have CAP_SYS_PTRACE
  bool proc_owned_by_root = false;  // /proc/PID belongs to root: the process is not dumpable (or root's)
  int yama_scope = -1;           // /proc/sys/kernel/yama/ptrace_scope, -1 without Yama
  bool our_descendant = false;   // Yama scope 1 lets a process trace its descendants
  pid_t tracer = 0;              // TracerPid: a debugger (or another attach) holds it
  bool stopped = false;          // State T: stopped by a signal (SIGSTOP, a job control stop)
  bool zombie = false;
  int elf_class = 0;             // ELFCLASS64 ...
  int elf_machine = 0;           // EM_X86_64 ...
  bool dynamic = false;          // has an interpreter (PT_INTERP): not statically linked
  bool libc_mapped = false;      // glibc's libc.so.6 is mapped
  std::string exe_error;         // why the executable could not be read ("" if it could)
};

// Reads what decides it for process `pid`.
ProcessFacts gather_facts(pid_t pid);

// Why callscope cannot attach to the process, with the fix; nullopt when it
// can (as far as can be told before trying: seccomp filters and container
// policies are found by the attempt, whose error names them).
std::optional<std::string> refusal(const ProcessFacts& facts);

}  // namespace callscope::inject
