#include "symbolize/symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>

#include "common/files.h"
#include "symbolize/elf_symbols.h"

namespace callscope::symbolize {
namespace {

const Dwfl_Callbacks kCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    nullptr,
};

}  // namespace

std::string demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

std::string Symbol::display() const {
  if (!function.empty()) return function;
  char buf[32];
  std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(offset));
  if (!module.empty()) return module + buf;
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(offset));
  return buf;
}

std::string Symbol::location() const {
  if (file.empty()) return "";
  return line > 0 ? file + ":" + std::to_string(line) : file;
}

struct Symbolizer::Process {
  // Sessions: a module goes to the first one none of whose modules it
  // overlaps (libdwfl refuses overlaps), so loads at the same address at
  // different times each have their own.
  struct Layer {
    Dwfl* dwfl = nullptr;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
  };
  std::vector<Layer> layers;
  // A function symbol, sorted by address. libdwfl's own lookup scans every
  // symbol of the module per call (seconds per thousand lookups on libLLVM),
  // so each module's table is read once and searched by bisection.
  struct Sym {
    uint64_t start;  // absolute address
    uint64_t end;    // start + size, or the next symbol's start when size is 0
    const char* name;
  };
  struct Mod {
    uint64_t low, high, bias;
    std::string name;
    bool usable;
    Dwfl_Module* dm = nullptr;
    bool loaded = false;      // syms and has_dwarf are known
    bool has_dwarf = false;   // line information may exist
    std::vector<Sym> syms;
    std::string file;         // path and build-id as recorded: two loads of one file
    // The address ranges of each compile unit (module addresses, sorted),
    // for modules without .debug_aranges (clang's default), where libdw
    // 0.188's dwfl_module_getsrc finds no unit; built on first need.
    struct CuRange {
      uint64_t low, high;
      Dwarf_Die cu;
    };
    std::vector<CuRange> cu_ranges;
    bool cu_ranges_built = false;
  };
  std::vector<Mod> mods;                          // the process's modules, in trace order
  // The names the modules import (undefined symbols of their .dynsym), each
  // with the first module, in trace order, that imports it: built on the
  // first need (imported()).
  std::unordered_map<std::string, size_t> imports;
  bool imports_read = false;
  const std::unordered_map<std::string, size_t>& imported();
  std::unordered_map<uint32_t, size_t> mod_of;    // trace module index -> mods index
  std::unordered_map<uint64_t, Symbol> cache;     // address alone
  std::map<std::pair<int64_t, uint64_t>, Symbol> by_module;  // (mods index, address), reused ranges only
  ~Process() {
    for (Layer& l : layers)
      if (l.dwfl) dwfl_end(l.dwfl);
  }
  Dwfl* layer_for(uint64_t low, uint64_t high) {
    for (Layer& l : layers) {
      bool clash = false;
      for (const auto& [lo, hi] : l.ranges) clash = clash || (low < hi && lo < high);
      if (!clash) {
        l.ranges.push_back({low, high});
        return l.dwfl;
      }
    }
    Layer l;
    l.dwfl = dwfl_begin(&kCallbacks);
    dwfl_report_begin(l.dwfl);
    l.ranges.push_back({low, high});
    layers.push_back(std::move(l));
    return layers.back().dwfl;
  }
};

Symbolizer::Symbolizer(const format::TraceReader& trace, SymbolizerOptions options)
    : trace_(trace), map_(std::make_unique<format::ModuleMap>(trace.modules())), options_(options) {
  processes_.resize(std::max<size_t>(trace.processes().size(), 1));
  modules_seen_ = trace.modules().size();
}

void Symbolizer::refresh() {
  const auto& modules = trace_.modules();
  if (modules.size() == modules_seen_) return;
  map_ = std::make_unique<format::ModuleMap>(modules);
  // A process that gained modules is set up again when next looked up.
  for (size_t i = modules_seen_; i < modules.size(); ++i) {
    const uint32_t pi = modules[i].record.process_index;
    if (pi < processes_.size()) processes_[pi].reset();
  }
  modules_seen_ = modules.size();
}

Symbolizer::~Symbolizer() = default;

Symbolizer::Process& Symbolizer::process(uint32_t index) {
  if (index >= processes_.size()) processes_.resize(index + 1);
  auto& slot = processes_[index];
  if (slot) return *slot;
  slot = std::make_unique<Process>();
  Process& p = *slot;
  const auto& modules = trace_.modules();
  for (uint32_t mi = 0; mi < modules.size(); ++mi) {
    const format::ModuleInfo& m = modules[mi];
    if (m.record.process_index != index || m.path.empty()) continue;
    p.mod_of[mi] = p.mods.size();
    Process::Mod mod{m.record.low, m.record.high, m.record.load_bias, base_name(m.path), false};
    mod.file = m.path + "\n" + m.build_id;
    if (m.path.find("linux-vdso") != std::string::npos || access(m.path.c_str(), R_OK) != 0) {
      if (m.path.find("linux-vdso") == std::string::npos)
        warnings_.push_back("module '" + m.path + "' is gone: its addresses are shown as offsets");
      p.mods.push_back(mod);
      continue;
    }
    // Opened here, not by libdwfl: a path that is now a FIFO or a device
    // is refused instead of blocking the open.
    auto file = open_regular_file(m.path);
    if (!file) {
      warnings_.push_back(file.error().message() + ": the addresses of that module are shown as offsets");
      p.mods.push_back(mod);
      continue;
    }
    // libdwfl owns the descriptor once it accepts it; not when it fails.
    Dwfl_Module* dm = dwfl_report_elf(p.layer_for(mod.low, mod.high), mod.name.c_str(), m.path.c_str(), file->fd,
                                      m.record.load_bias, true);
    if (!dm) {
      ::close(file->fd);
      warnings_.push_back("module '" + m.path + "': " + dwfl_errmsg(-1));
      p.mods.push_back(mod);
      continue;
    }
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    int n = dwfl_module_build_id(dm, &bits, &vaddr);
    if (!m.build_id.empty() && n > 0 && format::hex_string(bits, static_cast<size_t>(n)) != m.build_id) {
      warnings_.push_back("module '" + m.path + "' has changed since the recording (build-id " +
                          format::hex_string(bits, static_cast<size_t>(n)) +
                          ", recorded " + m.build_id + "): its addresses are shown as offsets");
      p.mods.push_back(mod);
      continue;
    }
    mod.usable = true;
    mod.dm = dm;
    p.mods.push_back(mod);
  }
  for (Process::Layer& l : p.layers) dwfl_report_end(l.dwfl, nullptr, nullptr);
  // One warning per module path, however many processes mapped it.
  std::sort(warnings_.begin(), warnings_.end());
  warnings_.erase(std::unique(warnings_.begin(), warnings_.end()), warnings_.end());
  return p;
}

namespace {

// How a name is preferred among the aliases of one address (lower first):
// libc has qsort beside __GI_qsort, strlen (the exported IFUNC) beside
// strlen_ifunc, snprintf (weak) beside __snprintf@@GLIBC_PRIVATE, puts
// beside _IO_puts, pthread_join@@GLIBC_2.34 beside ___pthread_join. The
// name a program calls wins: default visibility; no private version; fewer
// leading underscores; global, then weak, then local; unversioned, then
// the default version; then the shorter name (longjmp, not siglongjmp),
// then the first in byte order.
int alias_rank(const GElf_Sym& sym, const char* name) {
  const char* at = std::strchr(name, '@');
  int rank = GELF_ST_VISIBILITY(sym.st_other) == STV_DEFAULT ? 0 : 1;
  rank = rank * 2 + (at && std::strstr(at, "PRIVATE") ? 1 : 0);
  int underscores = 0;
  while (name[underscores] == '_' && underscores < 7) ++underscores;
  rank = rank * 8 + underscores;
  const int bind = GELF_ST_BIND(sym.st_info);
  rank = rank * 3 + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
  return rank * 3 + (at == nullptr ? 0 : at[1] == '@' ? 1 : 2);
}

// Reads a module's function symbols once, sorted, one name per address, with
// ends filled in. Of the aliases of one address, the name a module of the
// process imports comes first (the executable's before a library's: trace
// order), so that a library call shows as the program wrote it -- lseek64,
// open64, fopen64 for a program built with _FILE_OFFSET_BITS=64, where libc
// defines llseek, lseek, lseek64 and __lseek at one address -- then
// alias_rank.
void load_symbols(Symbolizer::Process::Mod& m, const std::unordered_map<std::string, size_t>& imports) {
  m.loaded = true;
  Dwarf_Addr dwarf_bias = 0;
  m.has_dwarf = dwfl_module_getdwarf(m.dm, &dwarf_bias) != nullptr;
  struct Candidate {
    Symbolizer::Process::Sym sym;
    size_t importer;  // the first module that imports the name; SIZE_MAX: none
    int rank;
  };
  auto importer = [&imports](const char* name) {
    if (imports.empty()) return SIZE_MAX;
    auto it = imports.find(std::string(name, std::strcspn(name, "@")));
    return it == imports.end() ? SIZE_MAX : it->second;
  };
  std::vector<Candidate> all;
  const int n = dwfl_module_getsymtab(m.dm);
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr addr = 0;
    const char* name = dwfl_module_getsym_info(m.dm, i, &sym, &addr, nullptr, nullptr, nullptr);
    const int type = GELF_ST_TYPE(sym.st_info);
    if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF) continue;
    all.push_back({{addr, sym.st_size ? addr + sym.st_size : 0, name}, importer(name), alias_rank(sym, name)});
  }
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.sym.start != b.sym.start) return a.sym.start < b.sym.start;
    if (a.importer != b.importer) return a.importer < b.importer;
    if (a.rank != b.rank) return a.rank < b.rank;
    const size_t la = std::strlen(a.sym.name), lb = std::strlen(b.sym.name);
    return la != lb ? la < lb : std::strcmp(a.sym.name, b.sym.name) < 0;
  });
  m.syms.clear();
  for (const Candidate& c : all) {
    if (!m.syms.empty() && m.syms.back().start == c.sym.start) {
      m.syms.back().end = std::max(m.syms.back().end, c.sym.end);  // an alias with a size
      continue;
    }
    m.syms.push_back(c.sym);
  }
  for (size_t i = 0; i < m.syms.size(); ++i)
    if (m.syms[i].end == 0) m.syms[i].end = i + 1 < m.syms.size() ? m.syms[i + 1].start : m.high;
}

// The line of `addr` found through the compile units' own ranges, for a
// module without .debug_aranges.
void source_by_units(Symbolizer::Process::Mod& m, uint64_t addr, Symbol& s) {
  Dwarf_Addr bias = 0;
  if (!m.cu_ranges_built) {
    m.cu_ranges_built = true;
    for (Dwarf_Die* cu = nullptr; (cu = dwfl_module_nextcu(m.dm, cu, &bias)) != nullptr;) {
      Dwarf_Addr base = 0, low = 0, high = 0;
      for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &low, &high)) > 0;)
        if (low < high) m.cu_ranges.push_back({low, high, *cu});
    }
    std::sort(m.cu_ranges.begin(), m.cu_ranges.end(), [](const auto& a, const auto& b) { return a.low < b.low; });
  }
  if (m.cu_ranges.empty() || !dwfl_module_getdwarf(m.dm, &bias)) return;
  const uint64_t rel = addr - bias;
  auto after = std::upper_bound(m.cu_ranges.begin(), m.cu_ranges.end(), rel,
                                [](uint64_t a, const Symbolizer::Process::Mod::CuRange& r) { return a < r.low; });
  if (after == m.cu_ranges.begin() || rel >= std::prev(after)->high) return;
  Dwarf_Line* line = dwarf_getsrc_die(&std::prev(after)->cu, rel);
  int lineno = 0;
  if (const char* file = line ? dwarf_linesrc(line, nullptr, nullptr) : nullptr) {
    dwarf_lineno(line, &lineno);
    s.file = file;
    s.line = lineno;
  }
}

}  // namespace

const std::unordered_map<std::string, size_t>& Symbolizer::Process::imported() {
  if (imports_read) return imports;
  imports_read = true;
  for (size_t i = 0; i < mods.size(); ++i) {
    if (!mods[i].usable) continue;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(mods[i].dm, &bias);
    if (!elf) continue;
    for_each_elf_symbol(elf, SHT_DYNSYM, [&](const GElf_Sym& sym, const char* name) {
      if (sym.st_shndx == SHN_UNDEF && name && *name) imports.try_emplace(name, i);
      return true;
    });
  }
  return imports;
}

Symbol Symbolizer::resolve(Process& p, int64_t mod_index, uint64_t addr) {
  Symbol s;
  s.offset = addr;
  Process::Mod* mod = mod_index >= 0 ? &p.mods[static_cast<size_t>(mod_index)] : nullptr;
  if (mod) {
    s.module = mod->name;
    s.offset = addr - mod->bias;
    if (mod->usable) {
      if (!mod->loaded) load_symbols(*mod, p.imported());
      auto after = std::upper_bound(mod->syms.begin(), mod->syms.end(), addr,
                                    [](uint64_t a, const Process::Sym& sym) { return a < sym.start; });
      if (after != mod->syms.begin() && addr < std::prev(after)->end) {
        // A versioned name of a library's symbol table (pthread_join@@GLIBC_2.34)
        // is shown without its version.
        const std::string name(std::string_view(std::prev(after)->name).substr(0, std::strcspn(std::prev(after)->name, "@")));
        s.function = options_.demangle ? demangle(name) : name;
      }
      if (mod->has_dwarf) {
        if (Dwfl_Line* line = dwfl_module_getsrc(mod->dm, addr)) {
          int lineno = 0;
          if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
            s.file = file;
            s.line = lineno;
          }
        } else {
          source_by_units(*mod, addr, s);
        }
      }
    }
  }
  return s;
}

const Symbol& Symbolizer::lookup(uint32_t process_index, uint64_t addr, uint64_t tick) {
  Process& p = process(process_index);
  if (!map_->reused(process_index, addr)) return lookup(process_index, addr);
  const int64_t m = map_->at(process_index, addr, tick);
  auto it = m >= 0 ? p.mod_of.find(static_cast<uint32_t>(m)) : p.mod_of.end();
  if (it == p.mod_of.end()) return lookup(process_index, addr);
  const int64_t mi = static_cast<int64_t>(it->second);
  auto hit = p.by_module.find({mi, addr});
  if (hit != p.by_module.end()) return hit->second;
  return p.by_module.emplace(std::make_pair(mi, addr), resolve(p, mi, addr)).first->second;
}

const Symbol& Symbolizer::lookup(uint32_t process_index, uint64_t addr) {
  Process& p = process(process_index);
  auto it = p.cache.find(addr);
  if (it != p.cache.end()) return it->second;
  // The candidates, in load order; which one when there are several.
  std::vector<size_t> c;
  for (uint32_t m : map_->covering(process_index, addr)) {
    auto jt = p.mod_of.find(m);
    if (jt != p.mod_of.end()) c.push_back(jt->second);
  }
  int64_t pick = c.empty() ? -1 : static_cast<int64_t>(c.back());
  if (c.size() > 1) {
    std::vector<size_t> usable;
    for (size_t m : c)
      if (p.mods[m].usable) usable.push_back(m);
    bool one_file = true;
    for (size_t m : usable) one_file = one_file && p.mods[m].file == p.mods[usable.front()].file;
    if (!usable.empty()) pick = static_cast<int64_t>(one_file ? usable.front() : usable.back());
    if (!one_file) {
      int64_t holds = -1;
      for (size_t m : usable) {
        Process::Mod& mod = p.mods[m];
        if (!mod.loaded) load_symbols(mod, p.imported());
        auto after = std::upper_bound(mod.syms.begin(), mod.syms.end(), addr,
                                      [](uint64_t a, const Process::Sym& sym) { return a < sym.start; });
        if (after == mod.syms.begin() || addr >= std::prev(after)->end) continue;
        if (std::prev(after)->start == addr) {
          pick = static_cast<int64_t>(m);
          holds = -2;
          break;
        }
        if (holds == -1) holds = static_cast<int64_t>(m);
      }
      if (holds >= 0) pick = holds;
    }
  }
  return p.cache.emplace(addr, resolve(p, pick, addr)).first->second;
}

}  // namespace callscope::symbolize
