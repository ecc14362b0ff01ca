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

#include <algorithm>
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
  release();  // the handles; the members below are assigned over
  fd_ = std::exchange(other.fd_, -1);
  elf_ = std::exchange(other.elf_, nullptr);
  std::memcpy(ident_, other.ident_, sizeof ident_);
  type_ = other.type_;
  machine_ = other.machine_;
  data_in_code_ = std::move(other.data_in_code_);
  has_symtab_ = other.has_symtab_;
  code_ = std::move(other.code_);
  functions_ = std::move(other.functions_);
  eh_frame_ = other.eh_frame_;
  debug_frame_ = other.debug_frame_;
  got_names_ = std::move(other.got_names_);
  plt_slots_ = std::move(other.plt_slots_);
  section_base_ = std::move(other.section_base_);
  section_alloc_ = std::move(other.section_alloc_);
  code_relocs_ = std::move(other.code_relocs_);
  code_in_data_ = std::move(other.code_in_data_);
  eh_frame_copy_ = std::move(other.eh_frame_copy_);
  debug_frame_copy_ = std::move(other.debug_frame_copy_);
  eh_frame_data_ = other.eh_frame_data_;
  debug_frame_data_ = other.debug_frame_data_;
  // The relocated CFI's Elf_Data lives in the object: follow it.
  if (other.eh_frame_.data == &other.eh_frame_data_) eh_frame_.data = &eh_frame_data_;
  if (other.debug_frame_.data == &other.debug_frame_data_) debug_frame_.data = &debug_frame_data_;
  archive_ = std::move(other.archive_);
  member_ = std::move(other.member_);
  return *this;
}

ElfImage::~ElfImage() { release(); }

void ElfImage::release() {
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0 && archive_ == nullptr) ::close(fd_);
  elf_ = nullptr;
  fd_ = -1;
  archive_.reset();
}

namespace {

// An archive's descriptor and Elf handle, shared by its members' images.
struct ArchiveHandle {
  int fd = -1;
  Elf* elf = nullptr;
  ~ArchiveHandle() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool ElfImage::is_archive(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  char magic[SARMAG] = {};
  const bool yes = ::pread(fd, magic, SARMAG, 0) == SARMAG && std::memcmp(magic, ARMAG, SARMAG) == 0;
  ::close(fd);
  return yes;
}

Result<std::vector<ElfImage>> ElfImage::open_archive(const std::string& path) {
  elf_version(EV_CURRENT);
  const std::string context = "cannot analyse '" + path + "'";
  auto file = open_regular_file(path);
  if (!file) return file.error().context(context);
  auto handle = std::make_shared<ArchiveHandle>();
  handle->fd = file->fd;
  handle->elf = elf_begin(handle->fd, ELF_C_READ_MMAP, nullptr);
  if (handle->elf == nullptr || elf_kind(handle->elf) != ELF_K_AR) {
    return Error(context + ": a corrupt ar archive: " + elf_errmsg(-1));
  }
  std::vector<ElfImage> members;
  Elf_Cmd cmd = ELF_C_READ_MMAP;
  while (Elf* member = elf_begin(handle->fd, cmd, handle->elf)) {
    // libelf keeps the header of the archive's current member: read it
    // before elf_next moves on.
    const Elf_Arhdr* header = elf_getarhdr(member);
    const std::string name = header != nullptr && header->ar_name != nullptr ? header->ar_name : "";
    const uint64_t size = header != nullptr ? static_cast<uint64_t>(header->ar_size) : 0;
    cmd = elf_next(member);
    // The archive's symbol and name tables ("/", "//") are not members.
    if (name.empty() || name[0] == '/' || elf_kind(member) != ELF_K_ELF) {
      elf_end(member);
      continue;
    }
    ElfImage image;
    image.fd_ = handle->fd;
    image.elf_ = member;
    image.archive_ = handle;
    image.member_ = name;
    Status st = image.load_elf(size);
    if (!st) return st.error().context(context + ": member '" + name + "'");
    if (!image.is_relocatable()) return Error(context + ": member '" + name + "' is not an object file");
    members.push_back(std::move(image));
  }
  if (members.empty()) return Error(context + ": the archive holds no object file");
  return members;
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
    return Error("an ar archive: open it with ElfImage::open_archive");
  }
  if (got < 4 || std::memcmp(magic, ELFMAG, SELFMAG) != 0) return Error("not an ELF file");
  if (got < EI_NIDENT) return Error("truncated ELF file (no complete ELF header)");
  if (magic[EI_CLASS] != ELFCLASS64 && magic[EI_CLASS] != ELFCLASS32) return Error("unsupported ELF class");

  elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
  if (elf_ == nullptr) return elf_error("cannot read ELF");
  return load_elf(file_size);
}

Status ElfImage::load_elf(uint64_t file_size) {
  if (elf_kind(elf_) != ELF_K_ELF) return Error("not an ELF file");
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf_, &ehdr) == nullptr) return elf_error("truncated or corrupt ELF header");
  std::memcpy(ident_, ehdr.e_ident, sizeof ident_);
  type_ = ehdr.e_type;
  machine_ = ehdr.e_machine;
  const bool elf64 = ehdr.e_ident[EI_CLASS] == ELFCLASS64;
  if (!((machine_ == EM_X86_64 && elf64) || (machine_ == EM_AARCH64 && elf64) || (machine_ == EM_ARM && !elf64))) {
    return Error("unsupported architecture (e_machine " + std::to_string(ehdr.e_machine) +
                 "): x86-64, AArch64 and 32-bit ARM (Thumb-2) are supported");
  }
  if (ehdr.e_ident[EI_DATA] != ELFDATA2LSB) return Error("a big-endian file: only little-endian code is supported");
  if (ehdr.e_type == ET_REL && machine_ != EM_X86_64) {
    return Error("an object file for ARM: object files are analysed for x86-64 only; link it first");
  }
  if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN && ehdr.e_type != ET_REL) {
    return Error("not an executable, shared library or object file (e_type " +
                 std::to_string(ehdr.e_type) + ")");
  }
  if (ehdr.e_shoff + uint64_t{ehdr.e_shnum} * ehdr.e_shentsize > file_size) {
    return Error("truncated ELF file: section headers end past the end of the file (" +
                 std::to_string(file_size) + " bytes)");
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) != 0) return elf_error("corrupt section header table");
  if (is_relocatable()) CALLSCOPE_CHECK(lay_out_relocatable());

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
    if (machine_ == EM_ARM && sh.sh_type == SHT_PROGBITS &&
        (name == ".isr_vector" || name == ".vectors" || name == ".vector_table")) {
      // A Cortex-M vector table: the initial stack pointer, then the
      // addresses of the handlers (with the Thumb bit), each an entry point.
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data != nullptr && data->d_buf != nullptr) {
        const auto* words = static_cast<const uint8_t*>(data->d_buf);
        for (size_t off = 4; off + 4 <= data->d_size; off += 4) {
          uint32_t w;
          std::memcpy(&w, words + off, 4);
          if ((w & 1) != 0) code_in_data_.push_back(w & ~uint32_t{1});
        }
      }
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
    const uint64_t address = is_relocatable() ? section_base(elf_ndxscn(scn)) : sh.sh_addr;
    if (code) {
      if (data->d_size > 0) code_.push_back({name, address, data->d_size, bytes, is_plt_name(name)});
    } else {
      RawSection& raw = name == ".eh_frame" ? eh_frame_ : debug_frame_;
      raw = {bytes, data->d_size, address, data};
    }
  }
  std::sort(code_.begin(), code_.end(),
            [](const CodeSection& a, const CodeSection& b) { return a.address < b.address; });

  // Function symbols: .symtab when present (it holds static functions too),
  // else .dynsym (a stripped file keeps only its exported names).
  has_symtab_ = symtab != nullptr;
  Elf_Scn* table = symtab != nullptr ? symtab : dynsym;
  std::vector<std::pair<uint64_t, char>> mapping;  // ARM mapping symbols: address, kind
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
      if (machine_ != EM_X86_64 && kind == STT_NOTYPE && sym.st_shndx != SHN_UNDEF) {
        // ARM mapping symbols: $x/$t (code), $a (A32 code), $d (data).
        const char* n = elf_strptr(elf_, sh.sh_link, sym.st_name);
        if (n != nullptr && n[0] == '$' && (n[1] == 'd' || n[1] == 'x' || n[1] == 't' || n[1] == 'a') &&
            (n[2] == '\0' || n[2] == '.')) {
          mapping.push_back({sym.st_value, n[1]});
        }
        continue;
      }
      if ((kind != STT_FUNC && kind != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
          sym.st_shndx >= SHN_LORESERVE || (sym.st_value == 0 && !is_relocatable())) {
        continue;
      }
      const char* n = elf_strptr(elf_, sh.sh_link, sym.st_name);
      if (n == nullptr || *n == '\0') continue;
      // In an object file a symbol's value is an offset in its section.
      uint64_t address = is_relocatable() ? section_base(sym.st_shndx) + sym.st_value : sym.st_value;
      if (machine_ == EM_ARM) address &= ~uint64_t{1};  // the Thumb bit
      functions_.push_back({address, sym.st_size, n, GELF_ST_BIND(sym.st_info) != STB_LOCAL});
    }
  }
  if (!mapping.empty()) {
    std::sort(mapping.begin(), mapping.end());
    for (size_t i = 0; i < mapping.size(); ++i) {
      if (mapping[i].second == 'a') {
        return Error("A32 (ARM-mode) code: only Thumb-2 code is analysed on 32-bit ARM");
      }
      if (mapping[i].second != 'd') continue;
      // Data runs to the next mapping symbol, or to the end of its section.
      const CodeSection* sec = code_at(mapping[i].first);
      if (sec == nullptr) continue;
      uint64_t end = sec->address + sec->size;
      if (i + 1 < mapping.size()) end = std::min(end, mapping[i + 1].first);
      if (end > mapping[i].first) data_in_code_.push_back({mapping[i].first, end});
    }
  }
  if (is_relocatable()) return read_relocations(relocs, symtab);

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

Status ElfImage::lay_out_relocatable() {
  // Every section that would be loaded gets an address of its own, in
  // section order, so that code, data and CFI can be told apart by address.
  size_t count = 0;
  if (elf_getshdrnum(elf_, &count) != 0) return elf_error("corrupt section header table");
  section_base_.assign(count, 0);
  section_alloc_.assign(count, false);
  uint64_t next = kRelocatableBase;
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) return elf_error("corrupt section header");
    const bool cfi_or_alloc = (sh.sh_flags & SHF_ALLOC) != 0 || sh.sh_type == SHT_PROGBITS;
    if (!cfi_or_alloc || sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL) continue;
    const uint64_t align = std::max<uint64_t>(16, std::min<uint64_t>(sh.sh_addralign, 1 << 20));
    next = (next + align - 1) / align * align;
    section_base_[elf_ndxscn(scn)] = next;
    section_alloc_[elf_ndxscn(scn)] = (sh.sh_flags & SHF_ALLOC) != 0;
    next += std::max<uint64_t>(sh.sh_size, 1);
  }
  return ok_status();
}

Status ElfImage::read_relocations(const std::vector<Elf_Scn*>& relocs, Elf_Scn* symtab) {
  if (symtab == nullptr) return ok_status();  // nothing can be named
  GElf_Shdr symsh;
  gelf_getshdr(symtab, &symsh);
  Elf_Data* sdata = elf_getdata(symtab, nullptr);
  if (sdata == nullptr) return elf_error("cannot read the symbol table");
  std::vector<uint64_t> function_starts;
  for (const FunctionSymbol& f : functions_) function_starts.push_back(f.address);
  std::sort(function_starts.begin(), function_starts.end());
  for (Elf_Scn* scn : relocs) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    Elf_Scn* target = elf_getscn(elf_, sh.sh_info);
    GElf_Shdr tsh;
    if (target == nullptr || gelf_getshdr(target, &tsh) == nullptr || sh.sh_entsize == 0) continue;
    const char* tname_raw = nullptr;
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf_, &shstrndx) == 0) tname_raw = elf_strptr(elf_, shstrndx, tsh.sh_name);
    const std::string tname = tname_raw != nullptr ? tname_raw : "";
    const bool code = (tsh.sh_flags & SHF_EXECINSTR) != 0;
    const bool cfi = tname == ".eh_frame" || tname == ".debug_frame";
    const bool data = !code && !cfi && (tsh.sh_flags & SHF_ALLOC) != 0;
    if (!code && !cfi && !data) continue;
    Elf_Data* rdata = elf_getdata(scn, nullptr);
    if (rdata == nullptr) continue;
    std::vector<uint8_t>* copy = nullptr;
    if (cfi) {
      // CFI's addresses are relocations in an object file: apply them to a
      // copy that the CFI reader then walks.
      const bool eh = tname == ".eh_frame";
      RawSection& raw = eh ? eh_frame_ : debug_frame_;
      if (!raw.present()) continue;
      copy = eh ? &eh_frame_copy_ : &debug_frame_copy_;
      copy->assign(raw.bytes, raw.bytes + raw.size);
      Elf_Data& d = eh ? eh_frame_data_ : debug_frame_data_;
      d = *raw.data;
      d.d_buf = copy->data();
      raw.data = &d;
      raw.bytes = copy->data();
    }
    const uint64_t base = section_base(sh.sh_info);
    const size_t count = rdata->d_size / sh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Rela rela;
      if (gelf_getrela(rdata, static_cast<int>(i), &rela) == nullptr) break;
      GElf_Sym sym;
      if (gelf_getsym(sdata, static_cast<int>(GELF_R_SYM(rela.r_info)), &sym) == nullptr) continue;
      const char* n = elf_strptr(elf_, symsh.sh_link, sym.st_name);
      const bool defined = sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE;
      // A symbol of a section that is not loaded (.debug_frame's own CIEs)
      // is an offset in it, as the linker resolves it.
      const bool loaded = sym.st_shndx < section_alloc_.size() && section_alloc_[sym.st_shndx];
      const uint64_t value = defined ? (loaded ? section_base(sym.st_shndx) : 0) + sym.st_value : 0;
      const uint64_t field = base + rela.r_offset;
      const uint64_t s_plus_a = value + static_cast<uint64_t>(rela.r_addend);
      const auto type = GELF_R_TYPE(rela.r_info);
      if (copy != nullptr) {
        if (!defined || rela.r_offset >= copy->size()) continue;
        uint64_t v = 0;
        size_t width = 0;
        if (type == R_X86_64_PC32) {
          v = s_plus_a - field;
          width = 4;
        } else if (type == R_X86_64_64) {
          v = s_plus_a;
          width = 8;
        } else if (type == R_X86_64_32 || type == R_X86_64_32S) {
          v = s_plus_a;
          width = 4;
        } else if (type == R_X86_64_PC64) {
          v = s_plus_a - field;
          width = 8;
        }
        if (width != 0 && rela.r_offset + width <= copy->size()) {
          std::memcpy(copy->data() + rela.r_offset, &v, width);  // little-endian
        }
        continue;
      }
      if (data) {
        // A pointer to a function in data: an ops table or a callback.
        if (defined && std::binary_search(function_starts.begin(), function_starts.end(), s_plus_a)) {
          code_in_data_.push_back(s_plus_a);
        }
        continue;
      }
      CodeReloc r;
      r.field = field;
      r.defined = defined;
      r.target = s_plus_a;
      if (n != nullptr && GELF_ST_TYPE(sym.st_info) != STT_SECTION) r.symbol = n;
      code_relocs_.push_back(std::move(r));
    }
  }
  std::sort(code_relocs_.begin(), code_relocs_.end(),
            [](const CodeReloc& a, const CodeReloc& b) { return a.field < b.field; });
  std::sort(code_in_data_.begin(), code_in_data_.end());
  code_in_data_.erase(std::unique(code_in_data_.begin(), code_in_data_.end()), code_in_data_.end());
  return ok_status();
}

const CodeReloc* ElfImage::reloc_in(uint64_t begin, uint64_t end) const {
  auto it = std::lower_bound(code_relocs_.begin(), code_relocs_.end(), begin,
                             [](const CodeReloc& r, uint64_t a) { return r.field < a; });
  return it != code_relocs_.end() && it->field < end ? &*it : nullptr;
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
  // Sorted by address (an object file built with -ffunction-sections has a
  // section per function).
  auto it = std::upper_bound(code_.begin(), code_.end(), address,
                             [](uint64_t a, const CodeSection& s) { return a < s.address; });
  if (it == code_.begin()) return nullptr;
  --it;
  return address - it->address < it->size ? &*it : nullptr;
}

}  // namespace callscope::stack
