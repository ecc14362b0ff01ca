#include "symbolize/elf_symbols.h"

namespace callscope::symbolize {

bool for_each_elf_symbol(Elf* elf, Elf64_Word type, const std::function<bool(const GElf_Sym&, const char*)>& f) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    const size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      if (!f(sym, elf_strptr(elf, sh.sh_link, sym.st_name))) return false;
    }
  }
  return true;
}

}  // namespace callscope::symbolize
