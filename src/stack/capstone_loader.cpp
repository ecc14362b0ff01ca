// See capstone_loader.h.
#include "stack/capstone_loader.h"

#include <dlfcn.h>

#include <type_traits>

namespace callscope::stack {
namespace {

#define CALLSCOPE_STR2(x) #x
#define CALLSCOPE_STR(x) CALLSCOPE_STR2(x)
constexpr const char* kCapstoneSoname = "libcapstone.so." CALLSCOPE_STR(CS_API_MAJOR);

}  // namespace

const Capstone& cs() {
  static const Capstone c = [] {
    Capstone r;
    void* h = ::dlopen(kCapstoneSoname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = ::dlerror();
      r.error = std::string("cannot load ") + kCapstoneSoname + " (the disassembler `callscope stack` needs: "
                "apt-get install libcapstone4): " + (why ? why : "unknown error");
      return r;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      if (!fn && r.error.empty()) r.error = std::string(kCapstoneSoname) + " has no " + name;
    };
    sym(r.open, "cs_open");
    sym(r.option, "cs_option");
    sym(r.malloc, "cs_malloc");
    sym(r.free, "cs_free");
    sym(r.close, "cs_close");
    sym(r.disasm_iter, "cs_disasm_iter");
    sym(r.insn_group, "cs_insn_group");
    return r;
  }();
  return c;
}

std::string disassemble_one(csh handle, cs_insn* insn, const uint8_t* code, uint64_t avail, uint64_t address) {
  size_t left = static_cast<size_t>(avail);
  uint64_t pc = address;
  if (!cs().disasm_iter(handle, &code, &left, &pc, insn)) return "(undecodable)";
  std::string text = insn->mnemonic;
  if (insn->op_str[0] != '\0') text += std::string(" ") + insn->op_str;
  return text;
}

}  // namespace callscope::stack
