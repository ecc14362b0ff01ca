// Walking an ELF file's symbol tables with libelf: the loop every reader of
// symbols repeats (sections of a type, their entries, names from the linked
// string table), written once.
#pragma once

#include <gelf.h>

#include <functional>

namespace callscope::symbolize {

// Calls f(symbol, name) for each entry of every section of type `type`
// (SHT_SYMTAB or SHT_DYNSYM) of `elf`, name nullptr when it has none; f
// returns false to stop. Returns false when f stopped the walk.
bool for_each_elf_symbol(Elf* elf, Elf64_Word type, const std::function<bool(const GElf_Sym&, const char*)>& f);

}  // namespace callscope::symbolize
