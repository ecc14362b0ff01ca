// Builds the StackModel of one ELF file: function boundaries from symbols and
// FDEs, frame sizes from CFI and prologues, call edges from the body scan.
#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "stack/arch.h"
#include "stack/cfi.h"
#include "stack/elf_image.h"
#include "stack/source_lines.h"
#include "stack/stack.h"

namespace callscope::stack {
namespace {

std::string demangle(const std::string& symbol) {
  if (symbol.size() < 2 || symbol[0] != '_' || symbol[1] != 'Z') return symbol;
  int status = 0;
  char* out = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  if (out == nullptr) return symbol;
  std::string s(out);
  std::free(out);
  return s;
}

constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

std::string hex_name(uint64_t address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
  return buf;
}

// Thread creation functions whose third argument is the start routine.
bool is_thread_create(const std::string& symbol) {
  const std::string base = symbol.substr(0, symbol.find('@'));
  return base == "pthread_create" || base == "thrd_create";
}

// Calls the kernel's build inserts that are not calls in the call graph:
// ftrace's entry hook (a nop until tracing starts; the tracer's stack is not
// counted) and the return thunk that stands for `ret`.
bool is_ignored_call(const std::string& name) {
  return name == "__fentry__" || name == "mcount" || name == "__x86_return_thunk";
}

// The hooks of instrumented code (-finstrument-functions, -pg, -mfentry):
// their frames are never below a recorded stack pointer.
bool is_instrumentation_hook(const std::string& name) {
  const std::string base = name.substr(0, name.find('@'));
  return base == "__cyg_profile_func_enter" || base == "__cyg_profile_func_exit" || base == "mcount" ||
         base == "_mcount" || base == "__fentry__";
}

// Retpoline thunks (-mindirect-branch=thunk-extern): an indirect call or jump.
bool is_indirect_thunk(const std::string& name) {
  return name.rfind("__x86_indirect_thunk_", 0) == 0 || name.rfind("__x86_indirect_call_thunk_", 0) == 0 ||
         name.rfind("__x86_indirect_jump_thunk_", 0) == 0;
}

// One function before it gets its frame: where its code is and its names.
struct Candidate {
  uint64_t address = 0;
  uint64_t size = 0;
  std::string symbol;
  bool global = false;
  const FdeFrame* fde = nullptr;
};

std::vector<Candidate> collect_functions(const ElfImage& image, const std::vector<FdeFrame>& fdes) {
  std::vector<Candidate> c;
  c.reserve(image.functions().size() + fdes.size());
  for (const FunctionSymbol& s : image.functions()) {
    const CodeSection* sec = image.code_at(s.address);
    if (sec == nullptr || sec->is_plt) continue;
    c.push_back({s.address, s.size, s.name, s.global, nullptr});
  }
  for (const FdeFrame& f : fdes) {
    const CodeSection* sec = image.code_at(f.start);
    if (sec == nullptr || sec->is_plt) continue;
    c.push_back({f.start, f.end - f.start, "", false, &f});
  }
  // One entry per address: prefer a global name, then any name; keep the FDE.
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    if (a.address != b.address) return a.address < b.address;
    if (a.symbol.empty() != b.symbol.empty()) return !a.symbol.empty();
    return a.global > b.global;
  });
  std::vector<Candidate> out;
  out.reserve(c.size());
  for (Candidate& x : c) {
    if (!out.empty() && out.back().address == x.address) {
      Candidate& keep = out.back();
      if (x.fde != nullptr) keep.fde = x.fde;
      if (keep.size == 0) keep.size = x.size;
      continue;
    }
    out.push_back(std::move(x));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    Candidate& x = out[i];
    if (x.fde != nullptr) x.size = std::max(x.size, x.fde->end - x.fde->start);
    // A symbol without a size ends where the next function or section does.
    const CodeSection* sec = image.code_at(x.address);
    const uint64_t sec_end = sec->address + sec->size;
    if (x.size == 0) x.size = (i + 1 < out.size() ? std::min(out[i + 1].address, sec_end) : sec_end) - x.address;
    x.size = std::min(x.size, sec_end - x.address);
  }
  return out;
}

}  // namespace

const char* frame_source_name(FrameSource source) {
  switch (source) {
    case FrameSource::kCfi: return "cfi";
    case FrameSource::kCfiAndPrologue: return "cfi+prologue";
    case FrameSource::kPrologue: return "prologue";
    case FrameSource::kPrologueCfiUnreadable: return "prologue:cfi-unreadable";
  }
  return "?";
}

std::optional<uint32_t> StackModel::function_at(uint64_t address) const {
  auto it = std::upper_bound(functions.begin(), functions.end(), address,
                             [](uint64_t a, const FunctionInfo& f) { return a < f.address; });
  if (it == functions.begin()) return std::nullopt;
  --it;
  if (address - it->address >= std::max<uint64_t>(it->size, 1)) return std::nullopt;
  return static_cast<uint32_t>(it - functions.begin());
}

namespace {

Result<StackModel> analyze_image(ElfImage& image, const std::string& path, const AnalyzeOptions& options) {
  const std::string context =
      "cannot analyse '" + path + "'" + (image.member().empty() ? "" : " (member '" + image.member() + "')");
  const Isa isa = image.machine() == EM_AARCH64 ? Isa::kAarch64
                  : image.machine() == EM_ARM   ? Isa::kThumb
                                                : Isa::kX86_64;
  auto arch_or = Arch::create(isa);
  if (!arch_or) return arch_or.error();
  Arch& arch = **arch_or;
  const bool x86 = isa == Isa::kX86_64;
  arch.set_relocatable(image.is_relocatable());
  auto cfi_or = read_cfi_frames(image, arch.dwarf_sp(), arch.entry_depth());
  if (!cfi_or) return cfi_or.error().context(context);
  const std::vector<FdeFrame>& fdes = cfi_or->frames;

  StackModel model;
  model.path = path;
  model.module = module_name(path);
  model.shared_object = image.is_shared_object();
  model.has_symtab = image.has_symtab();
  model.has_cfi = !fdes.empty();
  model.cfi_problem = cfi_or->problem;
  model.relocatable = image.is_relocatable();
  model.isa = x86 ? "x86-64" : isa == Isa::kAarch64 ? "aarch64" : "thumb";
  if (image.code_sections().empty()) return Error(context + ": no code sections");

  for (const CodeSection& sec : image.code_sections()) {
    if (!sec.is_plt || !x86) continue;
    for (const PltSlot& s : scan_plt(sec.bytes, sec.size, sec.address)) image.add_plt_slot(s.slot, s.got);
  }

  std::vector<Candidate> candidates = collect_functions(image, fdes);
  model.functions.reserve(candidates.size());
  std::vector<BodyFacts> bodies(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    const CodeSection* sec = image.code_at(c.address);
    const uint8_t* code = sec->bytes + (c.address - sec->address);
    FunctionInfo f;
    f.address = c.address;
    f.size = c.size;
    f.symbol = c.symbol;
    f.exported = c.global;
    f.name = c.symbol.empty() ? hex_name(c.address) : demangle(c.symbol);
    bool prologue_dynamic = false;
    if (c.fde != nullptr && !c.fde->uses_frame_register && !c.fde->cfa_expression) {
      f.frame_bytes = c.fde->max_sp_offset;
      f.source = FrameSource::kCfi;
    } else {
      // A kernel function starts with `call __fentry__` (-mfentry), maybe
      // after an endbr64: the prologue follows it.
      uint64_t start = c.address;
      if (image.is_relocatable()) {
        const uint64_t at = c.size >= 9 && std::memcmp(code, kEndbr64, 4) == 0 ? 4 : 0;
        const CodeReloc* r = c.size >= at + 5 && code[at] == 0xe8 ? image.reloc_in(c.address + at + 1, c.address + at + 5)
                                                                   : nullptr;
        if (r != nullptr && is_ignored_call(r->symbol)) start = c.address + at + 5;
      }
      const PrologueFrame p = arch.read_prologue(code, c.size, c.address, start, arch.entry_depth());
      prologue_dynamic = p.dynamic;
      // With a frame pointer the stack arguments pushed for a call (-O0)
      // are below the frame the prologue built and outside the CFI.
      f.frame_bytes = p.bytes + arch.call_argument_bytes(code, c.size, c.address, p.body_start);
      f.source = model.cfi_problem.empty() ? FrameSource::kPrologue : FrameSource::kPrologueCfiUnreadable;
      if (c.fde != nullptr) {
        f.frame_bytes = std::max(f.frame_bytes, c.fde->max_sp_offset);
        f.source = FrameSource::kCfiAndPrologue;
      }
    }
    arch.scan(code, c.size, c.address, image.data_in_code(), bodies[i]);
    f.sp_at_first_call = arch.sp_at_first_call(code, c.size, c.address);
    f.dynamic = bodies[i].dynamic_sp || prologue_dynamic;
    f.red_zone_bytes = bodies[i].red_zone;
    if (x86 && f.source != FrameSource::kCfi && bodies[i].below_rbp > 0 && bodies[i].below_rbp + 16 > f.frame_bytes) {
      // With rbp = the CFA - 16, locals below what the prologue allocated
      // (a -O0 leaf function that never moves rsp) are in the red zone.
      f.red_zone_bytes = std::max(f.red_zone_bytes,
                                  std::min<uint32_t>(bodies[i].below_rbp + 16 - f.frame_bytes, 128));
    }
    model.undecodable_bytes += bodies[i].undecodable;
    model.functions.push_back(std::move(f));
  }

  // An object file's debug information holds addresses before relocation,
  // not those of the layout given to its sections: no lines there.
  DebugLines debug(image.elf());
  const auto lines = image.is_relocatable() ? std::unordered_map<uint64_t, SourceLine>{}
                                            : debug.function_declarations();
  for (FunctionInfo& f : model.functions) {
    if (!image.member().empty()) f.file = image.member();  // an archive's member, without lines
    auto it = lines.find(f.address);
    if (it == lines.end()) continue;
    f.file = it->second.file;
    f.line = it->second.line;
  }

  // Calls through the PLT or GOT to a function this file defines (a shared
  // library calling its own exported functions) are taken as internal: that
  // is where they go unless another module interposes the symbol.
  std::unordered_map<std::string, uint32_t> by_symbol;
  for (uint32_t i = 0; i < model.functions.size(); ++i) {
    if (!candidates[i].symbol.empty() && candidates[i].global) by_symbol.emplace(candidates[i].symbol, i);
  }
  auto resolve_name = [&](const std::string* name, bool& is_thread_create_call) -> std::optional<uint32_t> {
    if (name == nullptr) return std::nullopt;
    is_thread_create_call = is_thread_create(*name);
    auto it = by_symbol.find(name->substr(0, name->find('@')));
    if (it == by_symbol.end()) return std::nullopt;
    return it->second;
  };

  std::vector<ExternalCall>& external_names = model.external_names;
  for (uint64_t a : image.code_addresses_in_data()) {
    if (auto fn = model.function_at(a); fn && model.functions[*fn].address == a) {
      model.functions[*fn].address_in_data = true;
    }
  }
  for (uint32_t i = 0; i < model.functions.size(); ++i) {
    FunctionInfo& f = model.functions[i];
    for (const CodeRef& ref : bodies[i].refs) {
      std::optional<uint32_t> callee;
      const std::string* callee_name = nullptr;
      bool thread_create = false;
      bool external = false;
      switch (ref.kind) {
        case RefKind::kCallIndirect:
        case RefKind::kJumpIndirect:
          f.indirect_calls = true;
          model.indirect_sites.push_back({i, ref.site, ref.kind == RefKind::kJumpIndirect});
          continue;
        case RefKind::kCallGot:
        case RefKind::kJumpGot: {
          if (image.is_relocatable()) {
            // call [rip + sym@GOTPCREL]: the relocation names the callee; a
            // relocation to data (a function pointer variable) is indirect.
            const CodeReloc* r = image.reloc_in(ref.site, ref.site + ref.length);
            if (r != nullptr && !r->symbol.empty() && !r->defined) {
              external_names.push_back({i, r->symbol, ref.kind == RefKind::kJumpGot});
              callee = resolve_name(&r->symbol, thread_create);
              callee_name = &r->symbol;
              external = !callee;
              break;
            }
            f.indirect_calls = true;
            model.indirect_sites.push_back({i, ref.site, ref.kind == RefKind::kJumpGot});
            continue;
          }
          // Through a GOT entry (-fno-plt) when a relocation names it, else
          // through a plain function pointer in memory.
          const std::string* got = image.got_target(ref.target);
          if (got == nullptr) {
            f.indirect_calls = true;
            model.indirect_sites.push_back({i, ref.site, ref.kind == RefKind::kJumpGot});
            continue;
          }
          callee = resolve_name(got, thread_create);
          callee_name = got;
          external = !callee;
          break;
        }
        case RefKind::kCall:
        case RefKind::kTailJump: {
          uint64_t target = ref.target;
          if (const CodeReloc* r = image.is_relocatable() ? image.reloc_in(ref.site, ref.site + ref.length) : nullptr) {
            // The displacement is the linker's to fill: symbol + addend,
            // relative to the field, which ends the instruction.
            if (is_ignored_call(r->symbol)) continue;
            if (!r->defined) {
              if (is_indirect_thunk(r->symbol)) {
                f.indirect_calls = true;
                model.indirect_sites.push_back({i, ref.site, ref.kind == RefKind::kTailJump});
                continue;
              }
              external_names.push_back({i, r->symbol, ref.kind == RefKind::kTailJump});
              callee = resolve_name(&r->symbol, thread_create);
              callee_name = &r->symbol;
              external = !callee;
              break;
            }
            target = r->target + (ref.site + ref.length - r->field);
          }
          const CodeSection* sec = image.code_at(target);
          if (sec != nullptr && sec->is_plt) {
            callee_name = image.plt_target(target);
            callee = resolve_name(callee_name, thread_create);
            external = !callee;
          } else {
            callee = model.function_at(target);
            // `call next; pop` (PIC thunks) and jumps into our own body.
            if (callee == i && target != f.address) continue;
            if (ref.kind == RefKind::kTailJump && callee &&
                model.functions[*callee].address != target) {
              callee.reset();  // a jump into the middle of code: not a call
            }
          }
          break;
        }
      }
      if (external) f.external_calls = true;
      if (external && !(callee_name != nullptr && is_instrumentation_hook(*callee_name))) {
        f.external_besides_hooks = true;
      }
      if (thread_create && ref.rdx_code_pointer != 0) {
        uint64_t pointer = ref.rdx_code_pointer;
        if (image.is_relocatable()) {
          const CodeReloc* r = image.reloc_in(ref.rdx_lea_end - 4, ref.rdx_lea_end);
          pointer = r != nullptr && r->defined ? r->target + (ref.rdx_lea_end - r->field) : 0;
        }
        auto entry = model.function_at(pointer);
        if (entry && model.functions[*entry].address == pointer) {
          model.functions[*entry].thread_entry = true;
        }
      }
      if (!callee) continue;
      const bool tail = ref.kind == RefKind::kTailJump || ref.kind == RefKind::kJumpGot;
      model.edges.push_back({i, *callee, tail ? EdgeKind::kTailCall : EdgeKind::kCall, ref.site});
    }
  }
  if (options.site_details) {
    for (IndirectSite& s : model.indirect_sites) {
      const FunctionInfo& f = model.functions[s.function];
      const CodeSection* sec = image.code_at(f.address);
      s.instruction = arch.describe(sec->bytes + (s.site - sec->address),
                                        sec->address + sec->size - s.site, s.site);
      if (image.is_relocatable()) {
        // An object file's displacement is not filled in: name the symbol.
        const CodeReloc* r = image.reloc_in(s.site, s.site + 16);
        if (r != nullptr && !r->symbol.empty()) s.instruction += "  <" + r->symbol + ">";
      }
      const SourceLine at = image.is_relocatable() ? SourceLine{} : debug.line_at(s.site);
      s.file = at.file;
      s.line = at.line;
    }
  }
  // One edge per (caller, callee, kind): call sites are not needed twice.
  std::sort(model.edges.begin(), model.edges.end(), [](const CallEdge& a, const CallEdge& b) {
    if (a.caller != b.caller) return a.caller < b.caller;
    if (a.callee != b.callee) return a.callee < b.callee;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.site < b.site;
  });
  model.edges.erase(std::unique(model.edges.begin(), model.edges.end(),
                                [](const CallEdge& a, const CallEdge& b) {
                                  return a.caller == b.caller && a.callee == b.callee &&
                                         a.kind == b.kind;
                                }),
                    model.edges.end());
  return model;
}

// The members of an archive in one model, as a linker would see them: each
// member's code after the previous one's, and a call to a name another
// member defines (globally) is an edge to it.
StackModel merge_members(std::vector<StackModel> members, const std::string& path) {
  StackModel out;
  out.path = path;
  out.module = module_name(path);
  out.relocatable = true;
  out.has_symtab = true;
  if (!members.empty()) out.isa = members.front().isa;
  uint64_t shift = 0;
  for (StackModel& m : members) {
    const uint32_t base = static_cast<uint32_t>(out.functions.size());
    uint64_t end = shift;  // a member without functions keeps the next one after the last
    for (FunctionInfo& f : m.functions) {
      f.address += shift;
      end = std::max(end, f.address + f.size);
      out.functions.push_back(std::move(f));
    }
    for (CallEdge e : m.edges) {
      e.caller += base;
      e.callee += base;
      if (e.site != 0) e.site += shift;
      out.edges.push_back(e);
    }
    for (IndirectSite site : m.indirect_sites) {
      site.function += base;
      site.site += shift;
      out.indirect_sites.push_back(std::move(site));
    }
    for (ExternalCall x : m.external_names) {
      x.caller += base;
      out.external_names.push_back(std::move(x));
    }
    out.has_cfi |= m.has_cfi;
    if (!m.cfi_problem.empty()) out.cfi_problem += (out.cfi_problem.empty() ? "" : "; ") + m.cfi_problem;
    out.undecodable_bytes += m.undecodable_bytes;
    shift = (end + 0xffff) / 0x10000 * 0x10000;
  }
  std::unordered_map<std::string, uint32_t> globals;
  for (uint32_t i = 0; i < out.functions.size(); ++i) {
    if (out.functions[i].exported && !out.functions[i].symbol.empty()) globals.emplace(out.functions[i].symbol, i);
  }
  for (FunctionInfo& f : out.functions) f.external_calls = f.external_besides_hooks = false;
  for (const ExternalCall& x : out.external_names) {
    auto it = globals.find(x.name);
    if (it == globals.end()) {
      out.functions[x.caller].external_calls = true;
      if (!is_instrumentation_hook(x.name)) out.functions[x.caller].external_besides_hooks = true;
      continue;
    }
    out.edges.push_back({x.caller, it->second, x.tail ? EdgeKind::kTailCall : EdgeKind::kCall, 0});
  }
  return out;
}

}  // namespace

Result<StackModel> analyze_binary(const std::string& path, const AnalyzeOptions& options) {
  if (!ElfImage::is_archive(path)) {
    CALLSCOPE_TRY(ElfImage image, ElfImage::open(path));
    return analyze_image(image, path, options);
  }
  CALLSCOPE_TRY(std::vector<ElfImage> images, ElfImage::open_archive(path));
  std::vector<StackModel> members;
  for (ElfImage& image : images) {
    if (image.code_sections().empty()) continue;  // a member of data only
    CALLSCOPE_TRY(StackModel m, analyze_image(image, path, options));
    members.push_back(std::move(m));
  }
  if (members.empty()) return Error("cannot analyse '" + path + "': no member of the archive holds code");
  return merge_members(std::move(members), path);
}

Status apply_user_edges(StackModel& model, const std::vector<UserEdge>& edges) {
  for (const UserEdge& e : edges) {
    const auto callers = select_functions(model, {e.caller});
    const auto callees = select_functions(model, {e.callee});
    const std::string where = "user edge on line " + std::to_string(e.line);
    if (callers.empty()) return Error(where + ": no function matches '" + e.caller.function + "'");
    if (callees.empty()) return Error(where + ": no function matches '" + e.callee.function + "'");
    for (uint32_t a : callers) {
      model.functions[a].indirect_closed = true;
      for (uint32_t b : callees) model.edges.push_back({a, b, EdgeKind::kUser, 0});
    }
  }
  return ok_status();
}

std::vector<uint32_t> select_functions(const StackModel& model,
                                       const std::vector<FunctionPattern>& patterns) {
  std::vector<bool> keep(model.functions.size(), patterns.empty());
  auto named = [&model](const FunctionInfo& f, const FunctionPattern& p, bool exact) {
    auto one = [&](const std::string& name) {
      if (exact) return p.function == name && p.matches(model.module, name);
      return p.matches(model.module, name);
    };
    return one(f.name) || (!f.symbol.empty() && f.symbol != f.name && one(f.symbol));
  };
  for (const FunctionPattern& p : patterns) {
    // A pattern that is some function's exact name selects by name only:
    // C++ names hold glob characters ("[abi:cxx11]") not meant as globs.
    bool exact = false;
    for (const FunctionInfo& f : model.functions) {
      if (named(f, p, true)) {
        exact = true;
        break;
      }
    }
    for (size_t i = 0; i < model.functions.size(); ++i) {
      if (!keep[i] && named(model.functions[i], p, exact)) keep[i] = true;
    }
  }
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < keep.size(); ++i) {
    if (keep[i]) out.push_back(i);
  }
  return out;
}

// A std::thread's start: libstdc++ runs the callable through the virtual
// _M_run of the thread's state, so that is where the thread's own stack
// begins (below libstdc++'s execute_native_thread_routine and libc).
bool is_std_thread_run(const std::string& name) {
  return name.rfind("std::thread::_State_impl<", 0) == 0 && name.find(">::_M_run()") != std::string::npos;
}

std::vector<uint32_t> default_entries(const StackModel& model) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < model.functions.size(); ++i) {
    const FunctionInfo& f = model.functions[i];
    // A kernel module starts at init_module and cleanup_module (the aliases
    // module_init() and module_exit() make), and at whatever the kernel is
    // handed in an ops table: functions whose address is stored in data;
    // firmware at the handlers of its vector table.
    const bool module_entry =
        f.address_in_data || (model.relocatable && (f.name == "init_module" || f.name == "cleanup_module"));
    if (f.name == "main" || f.thread_entry || is_std_thread_run(f.name) || module_entry) out.push_back(i);
  }
  return out;
}

WorstCase compute_worst_case(const StackModel& model, bool hooks_are_internal) {
  WorstCase w;
  w.graph.nodes.reserve(model.functions.size());
  for (const FunctionInfo& f : model.functions) {
    GraphNode n;
    n.frame_bytes = f.frame_bytes;
    n.red_zone_bytes = f.red_zone_bytes;
    n.dynamic = f.dynamic;
    n.unknown_calls = f.indirect_calls && !f.indirect_closed;
    n.external_calls = hooks_are_internal ? f.external_besides_hooks : f.external_calls;
    w.graph.nodes.push_back(n);
  }
  w.graph.edges.reserve(model.edges.size());
  for (const CallEdge& e : model.edges) {
    w.graph.edges.push_back({e.caller, e.callee, e.kind == EdgeKind::kTailCall});
  }
  w.adjacency = adjacency(w.graph);
  w.components = strongly_connected_components(w.graph, w.adjacency);
  w.depths = worst_depths(w.graph, w.adjacency, w.components);
  return w;
}

}  // namespace callscope::stack
