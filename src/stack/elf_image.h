// An ELF file opened for static stack analysis: its executable sections, its
// function symbols and its PLT slots, read once with libelf from a read-only
// mapping. All addresses here are ELF virtual addresses as written in the file
// (load-relative for PIE executables and shared libraries, absolute otherwise).
#pragma once

#include <libelf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "stack/arch.h"

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

// A relocation in code of a relocatable object (.o, .ko): the 4 or 8 bytes
// at `field` are filled in by the linker with symbol + addend (- field for
// PC-relative ones). Addresses are the layout ElfImage gives the sections.
struct CodeReloc {
  uint64_t field = 0;      // address of the relocated bytes
  uint64_t target = 0;     // symbol + addend (the symbol's address), when defined here
  bool defined = false;    // the symbol is defined in this object
  std::string symbol;      // its name ("" for a section symbol)
};

class ElfImage {
 public:
  ElfImage() = default;
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;
  ElfImage(ElfImage&& other) noexcept;
  ElfImage& operator=(ElfImage&& other) noexcept;
  ~ElfImage();

  // Opens and checks `path`: an ELF file for x86-64 or AArch64 (64-bit), or
  // 32-bit ARM in Thumb-2 (Cortex-M), whose section headers and sections lie
  // inside the file. The message names what is wrong.
  static Result<ElfImage> open(const std::string& path);
  // The members of an ar archive (.a), each a relocatable object; `path` is
  // known to be an archive (is_archive).
  static Result<std::vector<ElfImage>> open_archive(const std::string& path);
  static bool is_archive(const std::string& path);
  // The member's name inside its archive ("" for a file of its own).
  const std::string& member() const { return member_; }

  // A relocatable object (.o, .ko, a member of a .a): its sections are laid
  // out one after the other from kRelocatableBase, and its code's calls go
  // through relocations (reloc_in).
  bool is_relocatable() const { return type_ == 1; }  // ET_REL
  static constexpr uint64_t kRelocatableBase = 0x10000;
  // The relocation of a field in [begin, end), or nullptr.
  const CodeReloc* reloc_in(uint64_t begin, uint64_t end) const;
  // Addresses of functions stored in data: in an object file, relocations
  // in non-code sections that point at a function (ops tables, callbacks);
  // in Cortex-M firmware, the handlers of the vector table.
  const std::vector<uint64_t>& code_addresses_in_data() const { return code_in_data_; }

  Elf* elf() const { return elf_; }
  const unsigned char* ident() const { return ident_; }
  bool is_shared_object() const { return type_ == 3; }  // ET_DYN: PIE or .so
  unsigned machine() const { return machine_; }         // EM_X86_64, EM_AARCH64, EM_ARM
  unsigned address_size() const { return ident_[4] == 1 ? 4 : 8; }  // ELFCLASS32: 4
  // ARM: the data inside code sections (literal pools, tables) that the
  // `$d` mapping symbols mark, sorted.
  const std::vector<AddressRange>& data_in_code() const { return data_in_code_; }
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
  void release();  // the Elf handle and the descriptor
  Status load(const std::string& path);
  Status load_elf(uint64_t file_size);
  Status lay_out_relocatable();
  Status read_relocations(const std::vector<Elf_Scn*>& relocs, Elf_Scn* symtab);
  uint64_t section_base(size_t index) const {
    return index < section_base_.size() ? section_base_[index] : 0;
  }

  int fd_ = -1;
  Elf* elf_ = nullptr;
  unsigned char ident_[16] = {};
  unsigned type_ = 0;
  unsigned machine_ = 0;
  std::vector<AddressRange> data_in_code_;
  bool has_symtab_ = false;
  std::vector<CodeSection> code_;
  std::vector<FunctionSymbol> functions_;
  RawSection eh_frame_, debug_frame_;
  std::unordered_map<uint64_t, std::string> got_names_;  // GOT entry -> symbol
  std::unordered_map<uint64_t, uint64_t> plt_slots_;     // PLT slot -> GOT entry
  // Relocatable objects: the address given to each section (by index), the
  // relocations of code sorted by field, CFI with its relocations applied.
  std::vector<uint64_t> section_base_;
  std::vector<bool> section_alloc_;
  std::vector<CodeReloc> code_relocs_;
  std::vector<uint64_t> code_in_data_;
  std::vector<uint8_t> eh_frame_copy_, debug_frame_copy_;
  Elf_Data eh_frame_data_{}, debug_frame_data_{};
  // Archive members share the archive's descriptor and Elf handle.
  std::shared_ptr<void> archive_;
  std::string member_;
};

}  // namespace callscope::stack
