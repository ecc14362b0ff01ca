// gcc's one-byte-nop patchable entries made one five-byte nop while every
// thread of the process is stopped (sleds.h).
#include "inject/sleds.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include "inject/remote.h"

namespace callscope::inject {
namespace {

constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
constexpr uint8_t kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

// Where __patchable_function_entries lies in an ELF file (its address before
// relocation), and the lowest PT_LOAD address: 0 size when it has none.
struct EntryList {
  uint64_t addr = 0, size = 0, first_load = 0;
};

EntryList entry_list(const std::string& path) {
  EntryList out;
  std::ifstream f(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr))
    return out;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  f.seekg(static_cast<std::streamoff>(eh.e_shoff));
  if (sh.empty() || !f.read(reinterpret_cast<char*>(sh.data()), static_cast<std::streamsize>(sh.size() * sizeof sh[0])) ||
      eh.e_shstrndx >= sh.size())
    return out;
  std::string names(sh[eh.e_shstrndx].sh_size, '\0');
  f.seekg(static_cast<std::streamoff>(sh[eh.e_shstrndx].sh_offset));
  if (!f.read(names.data(), static_cast<std::streamsize>(names.size()))) return out;
  for (const Elf64_Shdr& s : sh)
    if (s.sh_name < names.size() && std::strcmp(names.c_str() + s.sh_name, "__patchable_function_entries") == 0) {
      out.addr = s.sh_addr;
      out.size = s.sh_size;
    }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  f.seekg(static_cast<std::streamoff>(eh.e_phoff));
  if (!ph.empty() && f.read(reinterpret_cast<char*>(ph.data()), static_cast<std::streamsize>(ph.size() * sizeof ph[0]))) {
    out.first_load = ~uint64_t{0};
    for (const Elf64_Phdr& p : ph)
      if (p.p_type == PT_LOAD) out.first_load = std::min(out.first_load, p.p_vaddr & ~uint64_t{4095});
  }
  return out;
}

// The sites of process `pid` that are five one-byte nops (after endbr64).
std::vector<uint64_t> single_nop_sleds(pid_t pid, std::string* error) {
  std::vector<uint64_t> sites;
  auto maps = read_maps(pid, error);
  if (!maps) return sites;
  // Each file's lowest mapping (offset 0) gives its load bias.
  std::map<std::string, uint64_t> lowest;
  for (const Mapping& m : *maps)
    if (!m.path.empty() && m.path[0] == '/' && m.offset == 0 && !lowest.count(m.path)) lowest[m.path] = m.start;
  for (const auto& [path, start] : lowest) {
    const EntryList list = entry_list(path);
    if (list.size == 0 || list.first_load == ~uint64_t{0}) continue;
    const uint64_t bias = start - list.first_load;
    std::vector<uint64_t> entries(list.size / 8);
    if (entries.empty() || !read_remote(pid, bias + list.addr, entries.data(), entries.size() * 8)) continue;
    for (uint64_t e : entries) {
      uint8_t b[9];
      if (!read_remote(pid, e, b, sizeof b)) continue;
      const uint8_t* p = std::memcmp(b, kEndbr64, 4) == 0 ? b + 4 : b;
      if (std::all_of(p, p + 5, [](uint8_t c) { return c == 0x90; })) sites.push_back(e + static_cast<uint64_t>(p - b));
    }
  }
  std::sort(sites.begin(), sites.end());
  return sites;
}

// Writes `bytes` at `addr` through ptrace (text is not writable otherwise).
bool poke(pid_t tid, uint64_t addr, const uint8_t* bytes, size_t n) {
  for (size_t done = 0; done < n;) {
    const uint64_t word_at = (addr + done) & ~uint64_t{7};
    errno = 0;
    long word = ::ptrace(PTRACE_PEEKDATA, tid, reinterpret_cast<void*>(word_at), nullptr);
    if (errno != 0) return false;
    auto* w = reinterpret_cast<uint8_t*>(&word);
    for (size_t k = (addr + done) - word_at; k < 8 && done < n; ++k) w[k] = bytes[done++];
    if (::ptrace(PTRACE_POKEDATA, tid, reinterpret_cast<void*>(word_at), reinterpret_cast<void*>(word)) != 0)
      return false;
  }
  return true;
}

}  // namespace

namespace {

// How many times every thread is stopped again while one is seen blocking
// SIGTRAP, 2 ms apart, before it is taken to block it for good.
constexpr int kStops = 50;

// Whether stopped thread `tid` of `pid` blocks SIGTRAP.
bool blocks_trap(pid_t pid, pid_t tid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigBlk:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGTRAP - 1)) & 1;
  return false;
}

// Stops every thread of `pid`, then unless one blocks SIGTRAP: moves a
// thread inside [site + 1, site + 5) of any of `sites` past it, and writes
// `bytes` (5) at each site; lets them all go.
SledResult rewrite_stopped(pid_t pid, const std::vector<uint64_t>& sites, const uint8_t* bytes) {
  SledResult r;
  if (sites.empty()) return r;
  auto t0 = std::chrono::steady_clock::now();
  std::map<pid_t, int> stopped;  // tid -> the signal to give back at the detach
  auto release = [&] {
    for (const auto& [tid, sig] : stopped) ::ptrace(PTRACE_DETACH, tid, nullptr, sig);
    stopped.clear();
    r.stopped_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // Every thread stopped; threads a thread started before it stopped are
  // found by listing again, until a listing brings none.
  auto stop_all = [&]() -> bool {
    t0 = std::chrono::steady_clock::now();
    for (bool more = true; more;) {
      more = false;
      for (pid_t tid : threads_of(pid)) {
        if (stopped.count(tid)) continue;
        if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
          if (errno == ESRCH) continue;  // ended meanwhile
          r.ok = false;
          r.error = "cannot stop thread " + std::to_string(tid) + ": " + std::strerror(errno);
          release();
          return false;
        }
        int status = 0;
        if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 || !wait_stop(tid, &status, now_ms() + 2000)) {
          stopped[tid] = 0;  // detached as it is
          if (errno == ESRCH) continue;
          r.ok = false;
          r.error = "thread " + std::to_string(tid) + " did not stop";
          release();
          return false;
        }
        // A signal arriving first is the program's: given back at the detach.
        stopped[tid] = is_event_stop(status) ? 0 : WSTOPSIG(status);
        more = true;
      }
    }
    return true;
  };
  // A thread that blocks SIGTRAP would die at a site being changed: the
  // runtime then changes none, and the sleds stay as they are too (read
  // while every thread is stopped: no mask changes meanwhile). One may
  // block it only for a moment: glibc blocks every signal in a thread's
  // first and last moments and in pthread_create around the clone, and an
  // earlier attach's control thread ends just after its detach. So the
  // threads run on a little and are stopped again, kStops times, before
  // one seen blocking it counts.
  for (int stops = 0;; ++stops) {
    if (!stop_all()) return r;
    bool blocked = false;
    for (const auto& [tid, sig] : stopped) blocked = blocked || blocks_trap(pid, tid);
    if (!blocked) break;
    release();
    if (stops == kStops) return r;
    ::usleep(2000);
  }
  r.threads = stopped.size();
  // A thread inside a sled goes on after it: the nops it skips do nothing.
  for (const auto& [tid, sig] : stopped) {
    user_regs_struct regs{};
    if (!get_regs(tid, &regs)) continue;
    auto it = std::upper_bound(sites.begin(), sites.end(), regs.rip);
    if (it == sites.begin()) continue;
    const uint64_t site = *(it - 1);
    if (regs.rip > site && regs.rip < site + 5) {
      regs.rip = site + 5;
      if (set_regs(tid, regs)) ++r.moved;
    }
  }
  const pid_t any = stopped.begin()->first;
  for (uint64_t site : sites) {
    if (!poke(any, site, bytes, 5)) {
      r.ok = false;
      r.error = std::string("cannot write the process's code: ") + std::strerror(errno);
      break;  // those written are done: the same code either way
    }
    r.joined.push_back(site);
    ++r.sleds;
  }
  release();
  return r;
}

constexpr uint8_t kSled[5] = {0x90, 0x90, 0x90, 0x90, 0x90};

}  // namespace

SledResult join_single_nop_sleds(pid_t pid) {
  std::string error;
  return rewrite_stopped(pid, single_nop_sleds(pid, &error), kNop5);
}

SledResult part_sleds(pid_t pid, const std::vector<uint64_t>& sites) {
  return rewrite_stopped(pid, sites, kSled);
}

}  // namespace callscope::inject
