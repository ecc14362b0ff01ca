// A flat open-addressing hash map from (parent node, key) to a child node id,
// for CallTree. The call tree looks a child up on every entry event, so this
// is on the analysis hot path: one multiply, a probe or two in one array, no
// allocation except when the table doubles.
#pragma once

#include <cstdint>
#include <vector>

namespace callscope::analysis {

class ChildIndex {
 public:
  static constexpr uint32_t kNone = 0xffffffffu;

  ChildIndex() : slots_(kInitialSlots) {}

  uint32_t find(uint32_t parent, uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(parent, key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.id == kNone) return kNone;
      if (s.key == key && s.parent == parent) return s.id;
    }
  }

  // `parent`/`key` must not be present yet.
  void insert(uint32_t parent, uint64_t key, uint32_t id) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    place(Slot{key, parent, id});
    ++used_;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t parent = 0;
    uint32_t id = kNone;
  };
  static constexpr size_t kInitialSlots = 64;

  static size_t hash(uint32_t parent, uint64_t key) {
    uint64_t h = (key ^ (uint64_t{parent} << 40 | parent)) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
  void place(const Slot& s) {
    const size_t mask = slots_.size() - 1;
    size_t i = hash(s.parent, s.key) & mask;
    while (slots_[i].id != kNone) i = (i + 1) & mask;
    slots_[i] = s;
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.id != kNone) place(s);
  }

  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace callscope::analysis
