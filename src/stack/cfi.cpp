// Linear reader of .eh_frame / .debug_frame: see cfi.h for why it does not
// use per-address libdw lookups.
#include "stack/cfi.h"

#include <elfutils/libdw.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>

namespace callscope::stack {
namespace {


// DW_EH_PE_* pointer encodings.
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeFormatMask = 0x0f;
constexpr uint8_t kPePcrel = 0x10;
constexpr uint8_t kPeApplicationMask = 0x70;

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  unsigned address_size = 8;  // of absptr pointers (4 in 32-bit ELF)

  uint8_t u8() {
    if (p >= end) return fail();
    return *p++;
  }
  uint64_t fixed(size_t n) {
    if (static_cast<size_t>(end - p) < n) return fail();
    uint64_t v = 0;
    std::memcpy(&v, p, n);  // little-endian host and target (x86-64)
    p += n;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; p < end && shift < 64; shift += 7) {
      const uint8_t b = *p++;
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    return fail();
  }
  int64_t sleb() {
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    do {
      if (p >= end || shift >= 64) return static_cast<int64_t>(fail());
      b = *p++;
      v |= int64_t{b & 0x7f} << shift;
      shift += 7;
    } while ((b & 0x80) != 0);
    if (shift < 64 && (b & 0x40) != 0) v |= -(int64_t{1} << shift);
    return v;
  }
  void skip(uint64_t n) {
    if (static_cast<uint64_t>(end - p) < n) {
      fail();
      return;
    }
    p += n;
  }
  uint8_t fail() {
    ok = false;
    p = end;
    return 0;
  }

  // Reads a pointer in DW_EH_PE encoding; `field_address` is the ELF virtual
  // address of the field, for pc-relative pointers.
  uint64_t pointer(uint8_t enc, uint64_t field_address) {
    uint64_t v = 0;
    switch (enc & kPeFormatMask) {
      case 0x00: v = fixed(address_size); break;
      case 0x01: v = uleb(); break;
      case 0x02: v = fixed(2); break;
      case 0x03: v = fixed(4); break;
      case 0x04: v = fixed(8); break;
      case 0x09: v = static_cast<uint64_t>(sleb()); break;
      case 0x0a: v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(fixed(2)))); break;
      case 0x0b: v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(fixed(4)))); break;
      case 0x0c: v = fixed(8); break;
      default: return fail();
    }
    if ((enc & kPeApplicationMask) == kPePcrel) v += field_address;
    return v;
  }
};

struct CieInfo {
  const uint8_t* instructions = nullptr;
  const uint8_t* instructions_end = nullptr;
  int64_t data_align = 1;
  uint8_t fde_encoding = 0;  // absptr: 8-byte absolute addresses
  bool z_augmentation = false;
  size_t fde_augmentation_size = 0;
  bool usable = false;
};

CieInfo parse_cie(const Dwarf_CIE& cie, uint64_t section_address, const uint8_t* section,
                  unsigned address_size) {
  CieInfo info;
  info.instructions = cie.initial_instructions;
  info.instructions_end = cie.initial_instructions_end;
  info.data_align = cie.data_alignment_factor;
  info.fde_augmentation_size = cie.fde_augmentation_data_size;
  const char* aug = cie.augmentation != nullptr ? cie.augmentation : "";
  if (aug[0] == '\0') {
    info.usable = true;
    return info;
  }
  if (aug[0] != 'z') return info;  // an augmentation we cannot size
  info.z_augmentation = true;
  Reader r{cie.augmentation_data, cie.augmentation_data + cie.augmentation_data_size};
  r.address_size = address_size;
  for (const char* a = aug + 1; *a != '\0' && r.ok; ++a) {
    switch (*a) {
      case 'R': info.fde_encoding = r.u8(); break;
      case 'L': r.u8(); break;
      case 'P': {
        const uint8_t enc = r.u8();
        const uint64_t field = section_address + static_cast<uint64_t>(r.p - section);
        r.pointer(enc & 0x7f, field);
        break;
      }
      case 'S': case 'B': break;
      default: return info;
    }
  }
  info.usable = r.ok;
  return info;
}

// A factored offset; a corrupt entry's huge factors wrap instead of
// overflowing (undefined behaviour for signed integers).
int64_t factored(int64_t value, int64_t align) {
  return static_cast<int64_t>(static_cast<uint64_t>(value) * static_cast<uint64_t>(align));
}

// Runs the CFA program of one entry and folds what it says into `frame`.
struct CfaState {
  uint64_t reg = 0;  // set to the stack pointer's register before use
  int64_t offset = 0;
};

void run_cfa_program(Reader r, const CieInfo& cie, uint64_t section_address,
                     const uint8_t* section, uint64_t sp_register, CfaState& cfa,
                     std::vector<CfaState>& saved, FdeFrame& frame) {
  auto note = [&] {
    if (cfa.reg == sp_register) {
      if (cfa.offset > 0 && cfa.offset > frame.max_sp_offset) {
        frame.max_sp_offset = static_cast<uint32_t>(std::min<int64_t>(cfa.offset, UINT32_MAX));
      }
    } else {
      frame.uses_frame_register = true;
    }
  };
  note();
  while (r.ok && r.p < r.end) {
    const uint8_t op = r.u8();
    switch (op >> 6) {
      case 1: continue;                // DW_CFA_advance_loc
      case 2: r.uleb(); continue;      // DW_CFA_offset
      case 3: continue;                // DW_CFA_restore
      default: break;
    }
    switch (op) {
      case 0x00: break;                                       // nop
      case 0x01: {                                            // set_loc
        const uint64_t field = section_address + static_cast<uint64_t>(r.p - section);
        r.pointer(cie.fde_encoding, field);
        break;
      }
      case 0x02: r.skip(1); break;                            // advance_loc1
      case 0x03: r.skip(2); break;                            // advance_loc2
      case 0x04: r.skip(4); break;                            // advance_loc4
      case 0x05: r.uleb(); r.uleb(); break;                   // offset_extended
      case 0x06: case 0x07: case 0x08: r.uleb(); break;       // restore_ext, undefined, same_value
      case 0x09: r.uleb(); r.uleb(); break;                   // register
      case 0x0a: saved.push_back(cfa); break;                 // remember_state
      case 0x0b:                                              // restore_state
        if (!saved.empty()) {
          cfa = saved.back();
          saved.pop_back();
        }
        break;
      case 0x0c:                                              // def_cfa
        cfa.reg = r.uleb();
        cfa.offset = static_cast<int64_t>(r.uleb());
        note();
        break;
      case 0x0d: cfa.reg = r.uleb(); note(); break;           // def_cfa_register
      case 0x0e: cfa.offset = static_cast<int64_t>(r.uleb()); note(); break;
      case 0x0f:                                              // def_cfa_expression
        r.skip(r.uleb());
        frame.cfa_expression = true;
        cfa.reg = ~uint64_t{0};
        break;
      case 0x10: r.uleb(); r.skip(r.uleb()); break;           // expression
      case 0x11: r.uleb(); r.sleb(); break;                   // offset_extended_sf
      case 0x12:                                              // def_cfa_sf
        cfa.reg = r.uleb();
        cfa.offset = factored(r.sleb(), cie.data_align);
        note();
        break;
      case 0x13: cfa.offset = factored(r.sleb(), cie.data_align); note(); break;
      case 0x14: r.uleb(); r.uleb(); break;                   // val_offset
      case 0x15: r.uleb(); r.sleb(); break;                   // val_offset_sf
      case 0x16: r.uleb(); r.skip(r.uleb()); break;           // val_expression
      case 0x2e: r.uleb(); break;                             // GNU_args_size
      case 0x2f: r.uleb(); r.uleb(); break;                   // GNU_negative_offset_extended
      default: r.fail(); break;                               // unknown: stop here
    }
  }
}

}  // namespace

namespace {

// Appends the FDEs of one section; returns a description of the corruption
// that stopped the walk, or "".
std::string read_section(const ElfImage& image, const RawSection& sec, bool eh, uint64_t sp_register,
                         uint32_t entry_depth, std::vector<FdeFrame>& frames) {
  const unsigned address_size = image.address_size();
  const char* name = eh ? ".eh_frame" : ".debug_frame";
  std::unordered_map<Dwarf_Off, CieInfo> cies;
  auto cie_at = [&](Dwarf_Off offset) -> const CieInfo* {
    auto it = cies.find(offset);
    if (it != cies.end()) return &it->second;
    Dwarf_CFI_Entry entry;
    Dwarf_Off next = 0;
    if (dwarf_next_cfi(image.ident(), sec.data, eh, offset, &next, &entry) != 0 ||
        !dwarf_cfi_cie_p(&entry)) {
      return nullptr;
    }
    return &cies.emplace(offset, parse_cie(entry.cie, sec.address, sec.bytes, address_size)).first->second;
  };

  std::vector<CfaState> saved;
  Dwarf_Off offset = 0;
  while (true) {
    Dwarf_CFI_Entry entry;
    Dwarf_Off next = 0;
    const int rc = dwarf_next_cfi(image.ident(), sec.data, eh, offset, &next, &entry);
    if (rc == 1) break;  // end of section
    if (rc != 0) {
      // A bad entry: skip it when libdw could find the next one.
      if (next == static_cast<Dwarf_Off>(-1) || next <= offset) {
        return std::string("corrupt ") + name + " at offset " + std::to_string(offset) + ": " +
               dwarf_errmsg(-1);
      }
      offset = next;
      continue;
    }
    const Dwarf_Off here = offset;
    offset = next;
    if (dwarf_cfi_cie_p(&entry)) {
      cies.emplace(here, parse_cie(entry.cie, sec.address, sec.bytes, address_size));
      continue;
    }
    const CieInfo* cie = cie_at(entry.fde.CIE_pointer);
    if (cie == nullptr || !cie->usable) continue;
    Reader r{entry.fde.start, entry.fde.end};
    r.address_size = address_size;
    const uint8_t enc = eh ? cie->fde_encoding : 0;
    const uint64_t field = sec.address + static_cast<uint64_t>(r.p - sec.bytes);
    const uint64_t start = r.pointer(enc, field);
    const uint64_t range = r.pointer(enc & kPeFormatMask, 0);
    if (cie->z_augmentation) {
      r.skip(r.uleb());
    } else {
      r.skip(cie->fde_augmentation_size);
    }
    // Entries of functions the linker discarded keep address 0 or no range.
    if (!r.ok || start == 0 || range == 0 || enc == kPeOmit) continue;
    FdeFrame frame;
    frame.start = start;
    frame.end = start + range;
    CfaState cfa{sp_register, entry_depth};
    saved.clear();
    Reader initial{cie->instructions, cie->instructions_end};
    initial.address_size = address_size;
    run_cfa_program(initial, *cie, sec.address, sec.bytes, sp_register, cfa, saved, frame);
    run_cfa_program(r, *cie, sec.address, sec.bytes, sp_register, cfa, saved, frame);
    frames.push_back(frame);
  }
  return "";
}

bool by_start(const FdeFrame& a, const FdeFrame& b) { return a.start < b.start; }

}  // namespace

Result<CfiFrames> read_cfi_frames(const ElfImage& image, uint64_t sp_register, uint32_t entry_depth) {
  CfiFrames out;
  if (image.eh_frame().present()) {
    out.problem = read_section(image, image.eh_frame(), true, sp_register, entry_depth, out.frames);
    std::sort(out.frames.begin(), out.frames.end(), by_start);
  }
  if (image.debug_frame().present()) {
    std::vector<FdeFrame> debug;
    const std::string problem =
        read_section(image, image.debug_frame(), false, sp_register, entry_depth, debug);
    if (!problem.empty()) out.problem += (out.problem.empty() ? "" : "; ") + problem;
    // Only code .eh_frame leaves uncovered: where both describe a function
    // they say the same, and .eh_frame is what the unwinder uses.
    std::vector<FdeFrame> eh = std::move(out.frames);
    out.frames.clear();
    for (const FdeFrame& f : debug) {
      auto it = std::upper_bound(eh.begin(), eh.end(), f, by_start);
      const bool covered = (it != eh.begin() && std::prev(it)->end > f.start) ||
                           (it != eh.end() && it->start < f.end);
      if (!covered) out.frames.push_back(f);
    }
    out.frames.insert(out.frames.end(), eh.begin(), eh.end());
    std::sort(out.frames.begin(), out.frames.end(), by_start);
  }
  return out;
}

}  // namespace callscope::stack
