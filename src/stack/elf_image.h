// An ELF file opened for static stack analysis: its executable sections, its
// function symbols and its PLT slots, read once with libelf from a read-only
// mapping. All addresses here are ELF virtual addresses as written in the file
// (load-relative for PIE executables and shared libraries, absolute otherwise).
#pragma once

#include <libelf.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"

namespace callscope::stack {

// A section holding code (SHF_EXECINSTR with bytes in the file).
struct CodeSection {
  std::string name;
  uint64_t address = 0;  // ELF virtual address
  uint64_t size = 0;     // bytes
  const uint8_t* bytes = nullptr;
  bool is_plt = false;   // .plt, .plt.sec, .plt.got: stubs into other modules
};

// A defined function symbol (STT_FUNC or STT_GNU_IFUNC).
struct FunctionSymbol {
  uint64_t address = 0;
  uint64_t size = 0;     // bytes; 0 when the symbol does not say
  std::string name;      // as in the symbol table (mangled)
  bool global = false;
};

// A raw section's bytes, for the CFI reader.
struct RawSection {
  const uint8_t* bytes = nullptr;
  uint64_t size = 0;
  uint64_t address = 0;
  Elf_Data* data = nullptr;  // libelf's view, for dwarf_next_cfi
  bool present() const { return data != nullptr; }
};

class ElfImage {
 public:
  ElfImage() = default;
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;
  ElfImage(ElfImage&& other) noexcept;
  ElfImage& operator=(ElfImage&& other) noexcept;
  ~ElfImage();

  // Opens and checks `path`: an ELF64 x86-64 file whose section headers and
  // sections lie inside the file. The message names what is wrong.
  static Result<ElfImage> open(const std::string& path);

  Elf* elf() const { return elf_; }
  const unsigned char* ident() const { return ident_; }
  bool is_shared_object() const { return type_ == 3; }  // ET_DYN: PIE or .so
  bool has_symtab() const { return has_symtab_; }
  const std::vector<CodeSection>& code_sections() const { return code_; }
  const std::vector<FunctionSymbol>& functions() const { return functions_; }
  const RawSection& eh_frame() const { return eh_frame_; }
  const RawSection& debug_frame() const { return debug_frame_; }

  // Name of the symbol a PLT slot or GOT entry leads to, or nullptr.
  const std::string* plt_target(uint64_t plt_slot_address) const;
  const std::string* got_target(uint64_t got_address) const;
  // Registers a PLT slot found by the disassembler: slot -> GOT entry.
  void add_plt_slot(uint64_t slot_address, uint64_t got_address);

  // The code section containing `address`, or nullptr.
  const CodeSection* code_at(uint64_t address) const;

 private:
  Status load(const std::string& path);

  int fd_ = -1;
  Elf* elf_ = nullptr;
  unsigned char ident_[16] = {};
  unsigned type_ = 0;
  bool has_symtab_ = false;
  std::vector<CodeSection> code_;
  std::vector<FunctionSymbol> functions_;
  RawSection eh_frame_, debug_frame_;
  std::unordered_map<uint64_t, std::string> got_names_;  // GOT entry -> symbol
  std::unordered_map<uint64_t, uint64_t> plt_slots_;     // PLT slot -> GOT entry
};

}  // namespace callscope::stack
