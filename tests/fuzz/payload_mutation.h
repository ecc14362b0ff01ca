// Mutations that reach past a trace's checksums: one block's payload is
// decompressed, changed, and stored again -- uncompressed, or compressed
// anew -- with its sizes and header check recomputed, as a crafted file
// would be. Random damage to a compressed block only ever tests zstd's
// checksum; this is what tests the range checks behind it (a module of
// process 0xffffffff, a record count past its block, a tree whose parent
// is a later node).
//
// Header-only, used by the libFuzzer target's custom mutator
// (trace_reader_fuzz.cpp) and by the plain regression test
// (tests/unit/format/trace_reader_fuzz_regression.cpp).
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "format/trace_format.h"

namespace callscope::fuzz {

struct BlockAt {
  size_t offset;  // of the block header in the file
  format::BlockHeader header;
};

// The chain of blocks whose headers hold (magic and check), from the file
// header on; it stops at the first that does not.
inline std::vector<BlockAt> chain_of_blocks(const std::vector<uint8_t>& file) {
  std::vector<BlockAt> out;
  if (file.size() < sizeof(format::FileHeader)) return out;
  format::FileHeader fh;
  std::memcpy(&fh, file.data(), sizeof fh);
  size_t off = fh.header_size < sizeof fh || fh.header_size > 4096 ? sizeof fh : fh.header_size;
  while (off + sizeof(format::BlockHeader) <= file.size()) {
    format::BlockHeader h;
    std::memcpy(&h, file.data() + off, sizeof h);
    if (h.magic != format::kBlockMagic || h.check != format::header_check(&h, offsetof(format::BlockHeader, check)))
      break;
    if (h.stored_size > file.size() - off - sizeof h) break;
    out.push_back({off, h});
    off += sizeof h + h.stored_size;
  }
  return out;
}

// The payload of `b` as the reader sees it once decompressed; false when it
// does not decompress.
inline bool payload_of(const std::vector<uint8_t>& file, const BlockAt& b, std::vector<uint8_t>& out) {
  const uint8_t* p = file.data() + b.offset + sizeof(format::BlockHeader);
  if (!(b.header.flags & format::kBlockCompressed)) {
    out.assign(p, p + b.header.stored_size);
    return true;
  }
  const unsigned long long n = ZSTD_getFrameContentSize(p, b.header.stored_size);
  if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n > (1u << 24)) return false;
  out.resize(n);
  const size_t got = ZSTD_decompress(out.data(), out.size(), p, b.header.stored_size);
  return !ZSTD_isError(got) && got == n;
}

// Puts `payload` in place of block `b`'s, compressed (with a checksum, as
// the writer does) or not, and seals the header again.
inline void replace_payload(std::vector<uint8_t>& file, const BlockAt& b, const std::vector<uint8_t>& payload,
                            bool compress) {
  std::vector<uint8_t> stored;
  format::BlockHeader h = b.header;
  if (compress) {
    stored.resize(ZSTD_compressBound(payload.size()));
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    const size_t n = ZSTD_compress2(c, stored.data(), stored.size(), payload.data(), payload.size());
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(n)) compress = false;
    else stored.resize(n);
  }
  if (!compress) stored = payload;
  h.flags = compress ? (h.flags | format::kBlockCompressed) : (h.flags & ~format::kBlockCompressed);
  h.stored_size = static_cast<uint32_t>(stored.size());
  h.raw_size = static_cast<uint32_t>(payload.size());
  h.check = format::header_check(&h, offsetof(format::BlockHeader, check));
  const size_t start = b.offset, end = b.offset + sizeof(format::BlockHeader) + b.header.stored_size;
  std::vector<uint8_t> out(file.begin(), file.begin() + static_cast<long>(start));
  out.insert(out.end(), reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h) + sizeof h);
  out.insert(out.end(), stored.begin(), stored.end());
  out.insert(out.end(), file.begin() + static_cast<long>(end), file.end());
  file.swap(out);
}

// One change to one block's payload, aimed at what payloads hold: record
// fields (indexes, counts, sizes, ticks) at their alignment, set to values
// at the edges; or whatever `bytes` (libFuzzer's own mutator, or a random
// one) makes of it. Sometimes the block header's own fields (aux0: a thread
// index; aux1: a snapshot; count) instead. `rng()` returns random 64-bit
// values; `bytes(data, size, max_size)` returns the new size. False when
// the file has no block to change.
template <class Rng, class Bytes>
bool mutate_payload(std::vector<uint8_t>& file, Rng& rng, Bytes&& bytes) {
  const std::vector<BlockAt> blocks = chain_of_blocks(file);
  if (blocks.empty()) return false;
  const BlockAt& b = blocks[rng() % blocks.size()];
  std::vector<uint8_t> p;
  if (!payload_of(file, b, p)) return false;
  static const uint32_t k32[] = {0,          1,          2,          3,          0xffffffffu, 0x7fffffffu,
                                 0x10000000u, 0x80000000u, 0xfffffffeu, 1u << 20,   4096,        65535};
  static const uint64_t k64[] = {0, 1, ~uint64_t{0}, uint64_t{1} << 63, (uint64_t{1} << 56) - 1, uint64_t{1} << 40};
  const uint64_t what = rng() % 8;
  if (what < 3 && p.size() >= 8) {  // a 32-bit field
    const size_t at = (rng() % (p.size() / 4)) * 4;
    const uint32_t v = k32[rng() % (sizeof k32 / sizeof k32[0])] + static_cast<uint32_t>(rng() % 3) - 1;
    std::memcpy(p.data() + at, &v, 4);
  } else if (what == 3 && p.size() >= 8) {  // a 64-bit field
    const size_t at = (rng() % (p.size() / 8)) * 8;
    const uint64_t v = k64[rng() % (sizeof k64 / sizeof k64[0])];
    std::memcpy(p.data() + at, &v, 8);
  } else if (what == 4) {  // the block's own indexes and count
    format::BlockHeader h = b.header;
    uint32_t* field = (rng() & 1) ? &h.aux0 : (rng() & 1) ? &h.aux1 : &h.count;
    *field = k32[rng() % (sizeof k32 / sizeof k32[0])];
    BlockAt changed{b.offset, h};
    std::memcpy(file.data() + b.offset, &h, sizeof h);  // sealed by replace_payload
    replace_payload(file, changed, p, (rng() & 1) != 0);
    return true;
  } else {  // anything
    const size_t size = p.size();
    p.resize(size * 2 + 64);
    p.resize(bytes(p.data(), size, p.size()));
  }
  replace_payload(file, b, p, (rng() & 1) != 0);
  return true;
}

}  // namespace callscope::fuzz
