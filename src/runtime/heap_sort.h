// Sorting inside the traced program without libc's qsort (which may
// allocate): an in-place heap sort by `less`.
#pragma once

#include <stdint.h>

namespace callscope::rt {

template <class T, class Less>
__attribute__((no_instrument_function)) void heap_sift(T* a, uint64_t i, uint64_t n, Less less) {
  for (;;) {
    uint64_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && less(a[c], a[c + 1])) ++c;
    if (!less(a[i], a[c])) return;
    const T t = a[i];
    a[i] = a[c];
    a[c] = t;
    i = c;
  }
}

template <class T, class Less>
__attribute__((no_instrument_function)) void heap_sort(T* a, uint64_t n, Less less) {
  for (uint64_t i = n / 2; i-- > 0;) heap_sift(a, i, n, less);
  for (uint64_t end = n; end-- > 1;) {
    const T t = a[0];
    a[0] = a[end];
    a[end] = t;
    heap_sift(a, 0, end, less);
  }
}

}  // namespace callscope::rt
