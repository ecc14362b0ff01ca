// A std::vector for arrays of hundreds of megabytes (the analyses' per-event
// and per-block arrays): allocations of 2 MiB and more are mapped with
// transparent huge pages asked for (MADV_HUGEPAGE), so the kernel fills
// them 2 MiB at a time instead of 4 KiB -- on a virtual machine, where each
// page fault is dear, the difference is most of an analysis's system time.
// Where huge pages are off, it is an anonymous mapping like malloc's own.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <vector>

namespace callscope {

template <class T>
struct BigAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  BigAllocator() = default;
  template <class U>
  BigAllocator(const BigAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return std::allocator<T>().allocate(n);
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, rounded, MADV_HUGEPAGE);  // advice: fine to fail
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return std::allocator<T>().deallocate(p, n);
    ::munmap(p, (bytes + kHuge - 1) / kHuge * kHuge);
  }
  template <class U>
  bool operator==(const BigAllocator<U>&) const {
    return true;
  }
};

template <class T>
using BigVector = std::vector<T, BigAllocator<T>>;

}  // namespace callscope
