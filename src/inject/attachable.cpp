#include "inject/attachable.h"

#include <elf.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "inject/remote.h"

namespace callscope::inject {
namespace {

bool have_cap_sys_ptrace() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective & CAP_TO_MASK(CAP_SYS_PTRACE)) != 0;
}

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::atoi(line.c_str() + 5));
  return 0;
}

bool descends_from(pid_t pid, pid_t ancestor) {
  for (int i = 0; i < 1024 && pid > 1; ++i) {
    pid = parent_of(pid);
    if (pid == ancestor) return true;
  }
  return false;
}

void read_executable(ProcessFacts& f) {
  const std::string exe = "/proc/" + std::to_string(f.pid) + "/exe";
  const int fd = ::open(exe.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    f.exe_error = std::strerror(errno);
    return;
  }
  Elf64_Ehdr eh{};
  if (::pread(fd, &eh, sizeof eh, 0) < static_cast<ssize_t>(EI_NIDENT + 4) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    f.exe_error = "not an ELF file";
    ::close(fd);
    return;
  }
  f.elf_class = eh.e_ident[EI_CLASS];
  f.elf_machine = eh.e_machine;
  if (f.elf_class == ELFCLASS64) {
    for (int i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph{};
      if (::pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + static_cast<uint64_t>(i) * eh.e_phentsize)) !=
          static_cast<ssize_t>(sizeof ph))
        break;
      if (ph.p_type == PT_INTERP) f.dynamic = true;
    }
  }
  ::close(fd);
}

}  // namespace

ProcessFacts gather_facts(pid_t pid) {
  ProcessFacts f;
  f.pid = pid;
  f.our_uid = ::geteuid();
  f.privileged = have_cap_sys_ptrace();
  const std::string dir = "/proc/" + std::to_string(pid);
  struct stat st {};
  if (pid <= 0 || ::stat(dir.c_str(), &st) != 0) return f;
  f.exists = true;
  f.proc_owned_by_root = st.st_uid == 0;
  std::ifstream status(dir + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Name:", 0) == 0) {
      f.name = line.substr(line.find_first_not_of(" \t", 5));
    } else if (line.rfind("State:", 0) == 0) {
      const char state = line[line.find_first_not_of(" \t", 6)];
      f.stopped = state == 'T';
      f.zombie = state == 'Z' || state == 'X';
    } else if (line.rfind("Uid:", 0) == 0) {
      f.uid = static_cast<uid_t>(std::atol(line.c_str() + 4));
    } else if (line.rfind("TracerPid:", 0) == 0) {
      f.tracer = static_cast<pid_t>(std::atoi(line.c_str() + 10));
    }
  }
  if (std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope"); yama) yama >> f.yama_scope;
  f.our_descendant = descends_from(pid, ::getpid());
  read_executable(f);
  std::string ignored;
  if (auto maps = read_maps(pid, &ignored))
    for (const Mapping& m : *maps)
      if (!m.path.empty() && is_libc(m.path.substr(m.path.rfind('/') + 1))) f.libc_mapped = true;
  return f;
}

std::optional<std::string> refusal(const ProcessFacts& f) {
  const std::string who = "process " + std::to_string(f.pid) + (f.name.empty() ? "" : " (" + f.name + ")");
  if (!f.exists) return "no process " + std::to_string(f.pid) + " (it ended, or the pid is wrong)";
  if (f.zombie) return who + " has ended (a zombie waiting for its parent)";
  if (!f.privileged) {
    if (f.uid != f.our_uid)
      return who + " belongs to user " + std::to_string(f.uid) + ", not to you (" + std::to_string(f.our_uid) +
             "): attach as that user, or with CAP_SYS_PTRACE (sudo)";
    if (f.proc_owned_by_root && f.our_uid != 0)
      return who + " is not dumpable (it made itself so with prctl(PR_SET_DUMPABLE, 0), or it changed its "
                   "user or ran a setuid program): attach with CAP_SYS_PTRACE (sudo)";
    if (f.yama_scope == 1 && !f.our_descendant)
      return "Yama's ptrace_scope is 1: only a process's ancestors may attach to it, and callscope is not one of " +
             who + "'s. Attach with CAP_SYS_PTRACE (sudo), or allow it for everyone with "
                   "`sudo sysctl kernel.yama.ptrace_scope=0`";
    if (f.yama_scope == 2)
      return "Yama's ptrace_scope is 2: only processes with CAP_SYS_PTRACE may attach. Attach with sudo, or set "
             "`sudo sysctl kernel.yama.ptrace_scope=1` (or 0)";
  }
  if (f.yama_scope == 3)
    return "Yama's ptrace_scope is 3: no process may attach to another until the next reboot (the setting cannot "
           "be lowered). Start the program under `callscope record` instead";
  if (f.tracer != 0)
    return who + " is already traced by process " + std::to_string(f.tracer) +
           " (a debugger, strace, or another callscope attach): detach that first";
  if (f.stopped) return who + " is stopped (SIGSTOP or a job control stop): continue it first (kill -CONT " +
                        std::to_string(f.pid) + ")";
  if (!f.exe_error.empty()) return "cannot read the executable of " + who + ": " + f.exe_error;
  if (f.elf_class != ELFCLASS64 || f.elf_machine != EM_X86_64)
    return who + " is not an x86-64 program: callscope attaches to x86-64 programs only";
  if (!f.dynamic)
    return who + " is statically linked: callscope loads its runtime with the dynamic linker, which such a "
                 "program does not have. Rebuild it dynamically linked, or start it under `callscope record`";
  if (!f.libc_mapped)
    return who + " does not use glibc's libc.so.6: callscope loads its runtime through glibc";
  return std::nullopt;
}

}  // namespace callscope::inject
