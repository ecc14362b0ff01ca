// Pointers to hooked library functions kept in data (data_pointers.h).
#include "symbolize/data_pointers.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>

#include "common/files.h"
#include "common/glob.h"
#include "runtime/patch/never_hooked.h"
#include "symbolize/elf_symbols.h"

namespace callscope::symbolize {
namespace {

// As the runtime matches a module (filter.cpp module_matches): its file
// name or its path.
bool module_matches(const std::vector<std::string>& globs, const std::string& path) {
  return glob_match_any(globs, base_name(path)) || glob_match_any(globs, path);
}

// The runtime's modules, the dynamic linker and the vDSO: never hooked.
bool ours(const std::string& path) {
  const std::string name = base_name(path);
  return name.rfind("libcallscope-", 0) == 0 || name.rfind("ld-linux", 0) == 0 ||
         path.find("linux-vdso") != std::string::npos;
}

// An ELF file opened with libelf, closed with it.
class ElfFile {
 public:
  explicit ElfFile(const std::string& path) {
    elf_version(EV_CURRENT);
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ >= 0) elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    if (elf_ && elf_kind(elf_) != ELF_K_ELF) {
      elf_end(elf_);
      elf_ = nullptr;
    }
  }
  ~ElfFile() {
    if (elf_) elf_end(elf_);
    if (fd_ >= 0) ::close(fd_);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  Elf* get() const { return elf_; }

 private:
  int fd_ = -1;
  Elf* elf_ = nullptr;
};

bool is_function(const GElf_Sym& s) {
  const int type = GELF_ST_TYPE(s.st_info);
  return type == STT_FUNC || type == STT_GNU_IFUNC;
}

// The functions a module defines (its .dynsym): what --patch-callers hooks
// calls to.
std::set<std::string> defined_functions(const std::string& path) {
  std::set<std::string> out;
  ElfFile f(path);
  if (!f.get()) return out;
  for_each_elf_symbol(f.get(), SHT_DYNSYM, [&](const GElf_Sym& s, const char* name) {
    if (s.st_shndx != SHN_UNDEF && is_function(s) && name && *name) out.insert(name);
    return true;
  });
  return out;
}

// The pointers to imported functions that `path`'s dynamic relocations
// write into its data, for which `wanted(name)` holds; nullopt when the file
// cannot be read.
template <typename Wanted>
std::optional<DataPointers> pointers_in(const std::string& path, Wanted wanted) {
  ElfFile f(path);
  Elf* elf = f.get();
  GElf_Ehdr eh;
  if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64) return std::nullopt;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return std::nullopt;
  // The GOT's own slots are the hooks' (GLOB_DAT there is hooked); a
  // GLOB_DAT elsewhere is a pointer in data like R_X86_64_64.
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name && (std::string_view(name) == ".got" || std::string_view(name) == ".got.plt"))
      got.emplace_back(sh.sh_addr, sh.sh_addr + sh.sh_size);
  }
  auto in_got = [&got](uint64_t a) {
    return std::any_of(got.begin(), got.end(), [a](const auto& r) { return a >= r.first && a < r.second; });
  };
  DataPointers d;
  d.path = path;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_entsize == 0) continue;
    // Dynamic relocations: those whose symbols are the .dynsym's.
    Elf_Scn* symscn = elf_getscn(elf, sh.sh_link);
    GElf_Shdr symsh;
    if (!symscn || !gelf_getshdr(symscn, &symsh) || symsh.sh_type != SHT_DYNSYM) continue;
    Elf_Data* rel = elf_getdata(scn, nullptr);
    Elf_Data* syms = elf_getdata(symscn, nullptr);
    if (!rel || !syms) continue;
    const size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n; ++i) {
      GElf_Rela r;
      if (!gelf_getrela(rel, static_cast<int>(i), &r)) continue;
      const auto type = static_cast<uint32_t>(GELF_R_TYPE(r.r_info));
      const auto index = static_cast<int>(GELF_R_SYM(r.r_info));
      if (index == 0 || !(type == R_X86_64_64 || (type == R_X86_64_GLOB_DAT && !in_got(r.r_offset)))) continue;
      GElf_Sym s;
      if (!gelf_getsym(syms, index, &s) || s.st_shndx != SHN_UNDEF || !is_function(s)) continue;
      const char* name = elf_strptr(elf, symsh.sh_link, s.st_name);
      if (!name || !*name || rt::never_hooked(name) || !wanted(std::string(name))) continue;
      ++d.pointers;
      if (std::find(d.functions.begin(), d.functions.end(), name) == d.functions.end()) d.functions.emplace_back(name);
    }
  }
  return d;
}

}  // namespace

std::vector<DataPointers> data_pointers(const std::vector<LoadedModule>& modules, const GotHooks& hooks) {
  std::vector<DataPointers> out;
  if (!hooks.any()) return out;
  // --patch-callers: the functions the named modules define, read once.
  std::optional<std::set<std::string>> callee_functions;
  auto defined_by_callees = [&](const std::string& name) {
    if (!callee_functions) {
      callee_functions.emplace();
      for (const LoadedModule& m : modules)
        if (!ours(m.path) && module_matches(hooks.callers, m.path)) callee_functions->merge(defined_functions(m.path));
    }
    return callee_functions->count(name) > 0;
  };
  std::set<std::string> seen;
  for (const LoadedModule& m : modules) {
    if (ours(m.path) || !seen.insert(m.path).second) continue;  // a library loaded again: said once
    // As patch_module() chooses (got.cpp): every slot, or those bound to the callers' modules.
    const bool all_slots = (hooks.libcalls && m.main) || module_matches(hooks.imports, m.path) ||
                           (m.main && glob_match_any(hooks.imports, "a.out"));
    if (!all_slots && hooks.callers.empty()) continue;
    auto d = pointers_in(m.path, [&](const std::string& name) { return all_slots || defined_by_callees(name); });
    if (d && d->pointers) out.push_back(std::move(*d));
  }
  return out;
}

std::string describe(const DataPointers& d) {
  std::string names;
  for (size_t i = 0; i < d.functions.size() && i < 6; ++i) names += (i ? ", " : "") + d.functions[i];
  if (d.functions.size() > 6) names += ", ...";
  return base_name(d.path) + ": " + std::to_string(d.pointers) + " pointer" + (d.pointers == 1 ? "" : "s") +
         " to hooked functions stored in data (" + names + "): calls through " + (d.pointers == 1 ? "it" : "them") +
         " are not recorded";
}

}  // namespace callscope::symbolize
