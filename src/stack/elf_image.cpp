// Opening an ELF file for the stack analysis: checks that make a corrupt or
// foreign file fail with one clear message, then the tables the analysis
// needs (code sections, function symbols, PLT relocations).
#include "stack/elf_image.h"

#include <ar.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/files.h"

namespace callscope::stack {
namespace {

Error elf_error(const std::string& what) { return Error(what + ": " + elf_errmsg(-1)); }

bool is_plt_name(const std::string& name) {
  return name == ".plt" || name == ".plt.sec" || name == ".plt.got" || name == ".iplt";
}

}  // namespace

ElfImage::ElfImage(ElfImage&& other) noexcept { *this = std::move(other); }

ElfImage& ElfImage::operator=(ElfImage&& other) noexcept {
  if (this == &other) return *this;
  this->~ElfImage();
  fd_ = std::exchange(other.fd_, -1);
  elf_ = std::exchange(other.elf_, nullptr);
  std::memcpy(ident_, other.ident_, sizeof ident_);
  type_ = other.type_;
  has_symtab_ = other.has_symtab_;
  code_ = std::move(other.code_);
  functions_ = std::move(other.functions_);
  eh_frame_ = other.eh_frame_;
  debug_frame_ = other.debug_frame_;
  got_names_ = std::move(other.got_names_);
  plt_slots_ = std::move(other.plt_slots_);
  return *this;
}

ElfImage::~ElfImage() {
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
  elf_ = nullptr;
  fd_ = -1;
}

Result<ElfImage> ElfImage::open(const std::string& path) {
  ElfImage image;
  Status st = image.load(path);
  if (!st) return st.error().context("cannot analyse '" + path + "'");
  return image;
}

Status ElfImage::load(const std::string& path) {
  elf_version(EV_CURRENT);
  CALLSCOPE_TRY(const OpenedFile file, open_regular_file(path));  // a FIFO would block a plain open
  fd_ = file.fd;
  const uint64_t file_size = file.size;

  // Check the magic ourselves: libelf calls anything "ELF_K_NONE" and its
  // message for a text file is unhelpful.
  unsigned char magic[EI_NIDENT] = {};
  ssize_t got = ::pread(fd_, magic, sizeof magic, 0);
  if (got >= SARMAG && std::memcmp(magic, ARMAG, SARMAG) == 0) {
    return Error("a static library (ar archive): its members are relocatable objects, which are "
                 "not analysed yet; link them into an executable or shared library first");
  }
  if (got < 4 || std::memcmp(magic, ELFMAG, SELFMAG) != 0) return Error("not an ELF file");
  if (got < EI_NIDENT) return Error("truncated ELF file (no complete ELF header)");
  if (magic[EI_CLASS] != ELFCLASS64) return Error("unsupported ELF class: only 64-bit ELF is supported");

  elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
  if (elf_ == nullptr) return elf_error("cannot read ELF");
  if (elf_kind(elf_) != ELF_K_ELF) return Error("not an ELF file");
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf_, &ehdr) == nullptr) return elf_error("truncated or corrupt ELF header");
  std::memcpy(ident_, ehdr.e_ident, sizeof ident_);
  type_ = ehdr.e_type;
  if (ehdr.e_machine != EM_X86_64) {
    return Error("unsupported architecture (e_machine " + std::to_string(ehdr.e_machine) +
                 "): only x86-64 is supported for now");
  }
  if (ehdr.e_type == ET_REL) {
    return Error("a relocatable object file: calls are not relocated yet, link it first");
  }
  if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN) {
    return Error("not an executable or shared library (e_type " + std::to_string(ehdr.e_type) +
                 ")");
  }
  if (ehdr.e_shoff + uint64_t{ehdr.e_shnum} * ehdr.e_shentsize > file_size) {
    return Error("truncated ELF file: section headers end past the end of the file (" +
                 std::to_string(file_size) + " bytes)");
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) != 0) return elf_error("corrupt section header table");

  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  std::vector<Elf_Scn*> relocs;
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) return elf_error("corrupt section header");
    const char* raw_name = elf_strptr(elf_, shstrndx, sh.sh_name);
    std::string name = raw_name != nullptr ? raw_name : "";
    if (sh.sh_type != SHT_NOBITS && sh.sh_offset + sh.sh_size > file_size) {
      return Error("truncated ELF file: section '" + name + "' (offset " +
                   std::to_string(sh.sh_offset) + ", " + std::to_string(sh.sh_size) +
                   " bytes) ends past the end of the file (" + std::to_string(file_size) +
                   " bytes)");
    }
    if (sh.sh_type == SHT_SYMTAB) symtab = scn;
    if (sh.sh_type == SHT_DYNSYM) dynsym = scn;
    if (sh.sh_type == SHT_RELA) relocs.push_back(scn);
    const bool wanted_cfi = name == ".eh_frame" || name == ".debug_frame";
    const bool code = (sh.sh_flags & SHF_EXECINSTR) != 0 && sh.sh_type == SHT_PROGBITS;
    if (!code && !wanted_cfi) continue;
    if ((sh.sh_flags & SHF_COMPRESSED) != 0 && elf_compress(scn, 0, 0) < 0) {
      return elf_error("cannot decompress section '" + name + "'");
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || (data->d_size > 0 && data->d_buf == nullptr)) {
      return elf_error("cannot read section '" + name + "'");
    }
    const auto* bytes = static_cast<const uint8_t*>(data->d_buf);
    if (code) {
      code_.push_back({name, sh.sh_addr, data->d_size, bytes, is_plt_name(name)});
    } else {
      RawSection& raw = name == ".eh_frame" ? eh_frame_ : debug_frame_;
      raw = {bytes, data->d_size, sh.sh_addr, data};
    }
  }

  // Function symbols: .symtab when present (it holds static functions too),
  // else .dynsym (a stripped file keeps only its exported names).
  has_symtab_ = symtab != nullptr;
  Elf_Scn* table = symtab != nullptr ? symtab : dynsym;
  if (table != nullptr) {
    GElf_Shdr sh;
    gelf_getshdr(table, &sh);
    Elf_Data* data = elf_getdata(table, nullptr);
    if (data == nullptr) return elf_error("cannot read the symbol table");
    const size_t count = sh.sh_entsize != 0 ? data->d_size / sh.sh_entsize : 0;
    functions_.reserve(count / 2);
    for (size_t i = 1; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
      const int kind = GELF_ST_TYPE(sym.st_info);
      if ((kind != STT_FUNC && kind != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
          sym.st_value == 0) {
        continue;
      }
      const char* n = elf_strptr(elf_, sh.sh_link, sym.st_name);
      if (n == nullptr || *n == '\0') continue;
      functions_.push_back({sym.st_value, sym.st_size, n, GELF_ST_BIND(sym.st_info) != STB_LOCAL});
    }
  }

  // PLT targets: JUMP_SLOT and GLOB_DAT relocations name the GOT entries that
  // PLT stubs and `call [rip+GOT]` (-fno-plt) jump through.
  for (Elf_Scn* scn : relocs) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    Elf_Scn* symscn = elf_getscn(elf_, sh.sh_link);
    GElf_Shdr symsh;
    if (symscn == nullptr || gelf_getshdr(symscn, &symsh) == nullptr) continue;
    Elf_Data* rdata = elf_getdata(scn, nullptr);
    Elf_Data* sdata = elf_getdata(symscn, nullptr);
    if (rdata == nullptr || sdata == nullptr || sh.sh_entsize == 0) continue;
    const size_t count = rdata->d_size / sh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Rela rela;
      if (gelf_getrela(rdata, static_cast<int>(i), &rela) == nullptr) break;
      const auto type = GELF_R_TYPE(rela.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      GElf_Sym sym;
      if (gelf_getsym(sdata, static_cast<int>(GELF_R_SYM(rela.r_info)), &sym) == nullptr) continue;
      const char* n = elf_strptr(elf_, symsh.sh_link, sym.st_name);
      if (n != nullptr && *n != '\0') got_names_.emplace(rela.r_offset, n);
    }
  }
  return ok_status();
}

const std::string* ElfImage::got_target(uint64_t got_address) const {
  auto it = got_names_.find(got_address);
  return it == got_names_.end() ? nullptr : &it->second;
}

const std::string* ElfImage::plt_target(uint64_t plt_slot_address) const {
  auto it = plt_slots_.find(plt_slot_address);
  return it == plt_slots_.end() ? nullptr : got_target(it->second);
}

void ElfImage::add_plt_slot(uint64_t slot_address, uint64_t got_address) {
  plt_slots_.emplace(slot_address, got_address);
}

const CodeSection* ElfImage::code_at(uint64_t address) const {
  for (const CodeSection& s : code_) {
    if (address >= s.address && address - s.address < s.size) return &s;
  }
  return nullptr;
}

}  // namespace callscope::stack
