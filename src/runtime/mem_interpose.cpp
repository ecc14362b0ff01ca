// libcallscope-mem.so: what `record --memory` preloads before the runtime.
// It defines malloc, free, calloc, realloc, reallocarray, posix_memalign,
// aligned_alloc, memalign, valloc, pvalloc and every operator new and delete;
// each calls the allocator the program would have called (the next
// definition: glibc's, or a jemalloc/tcmalloc/mimalloc the program links
// dynamically) and tells the runtime (callscope_rt_memory), which writes the
// event into the thread's stream.
//
// Order: an allocation is told after it is made (its block is known then), a
// free before it is made (once freed, another thread may get the same block
// and tell its allocation first).
//
// Bootstrap: the real functions are found with dlsym(RTLD_NEXT), which may
// itself allocate; until they are known, allocations come from a small arena
// of our own, never freed (free ignores its blocks).
//
// operator new and delete are done here, as libstdc++ does them (below). C++
// is not linked: no exception passes through here but the std::bad_alloc new
// throws, which needs only the unwind tables.
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format/trace_format.h"
#include "runtime/mem_unwind.h"

#define CALLSCOPE_MEM_EXPORT extern "C" __attribute__((visibility("default"), no_instrument_function))
#define CALLSCOPE_NOINSTR __attribute__((no_instrument_function))

// The runtime's (libcallscope-rt.so, preloaded after us). Weak: without it
// (LD_PRELOAD of this library alone) nothing is told.
extern "C" void callscope_rt_memory(unsigned op, const void* ptr, unsigned long size) __attribute__((weak));
// With the allocation's call path, unwound here (mem_unwind.h): innermost
// frame first.
extern "C" void callscope_rt_memory_path(unsigned op, const void* ptr, unsigned long size, const uint64_t* fns,
                                         const uint64_t* sites, unsigned n) __attribute__((weak));

namespace {

using fmt_op = callscope::format::AllocOp;

using MallocFn = void* (*)(size_t);
using FreeFn = void (*)(void*);
using CallocFn = void* (*)(size_t, size_t);
using ReallocFn = void* (*)(void*, size_t);
using PosixMemalignFn = int (*)(void**, size_t, size_t);
using AlignedFn = void* (*)(size_t, size_t);
using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, size_t);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);

struct Real {
  MallocFn malloc;
  FreeFn free;
  CallocFn calloc;
  ReallocFn realloc;
  PosixMemalignFn posix_memalign;
  AlignedFn aligned_alloc;
  AlignedFn memalign;
  MallocFn valloc;
  MallocFn pvalloc;
  MmapFn mmap;
  MunmapFn munmap;
  MremapFn mremap;
};
Real g_real;

enum : int { kUnresolved = 0, kResolving = 1, kResolved = 2 };
int g_state = kUnresolved;

// The bootstrap arena (dlsym's allocations, and anything before).
alignas(64) char g_arena[256 << 10];
size_t g_arena_used = 0;


CALLSCOPE_NOINSTR bool in_arena(const void* p) {
  return static_cast<const char*>(p) >= g_arena && static_cast<const char*>(p) < g_arena + sizeof g_arena;
}

CALLSCOPE_NOINSTR void* arena_alloc(size_t n, size_t align = 16) {
  if (align < 16) align = 16;
  size_t at = __atomic_load_n(&g_arena_used, __ATOMIC_RELAXED);
  for (;;) {
    const size_t start = (at + align - 1) & ~(align - 1);
    if (start + n > sizeof g_arena || start + n < start) return nullptr;
    if (__atomic_compare_exchange_n(&g_arena_used, &at, start + n, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      return g_arena + start;
  }
}

// Set while this library finds the real functions: dlsym's own allocations
// (its error strings, for a symbol the program does not have) are ours, not
// the program's.
__thread int t_quiet __attribute__((tls_model("initial-exec"))) = 0;

template <class F>
CALLSCOPE_NOINSTR void find(F& f, const char* name) {
  f = reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

CALLSCOPE_NOINSTR void resolve_now() {
  ++t_quiet;
  find(g_real.malloc, "malloc");
  find(g_real.free, "free");
  find(g_real.calloc, "calloc");
  find(g_real.realloc, "realloc");
  find(g_real.posix_memalign, "posix_memalign");
  find(g_real.aligned_alloc, "aligned_alloc");
  find(g_real.memalign, "memalign");
  find(g_real.valloc, "valloc");
  find(g_real.pvalloc, "pvalloc");
  find(g_real.mmap, "mmap");
  find(g_real.munmap, "munmap");
  find(g_real.mremap, "mremap");
  --t_quiet;
}

// True once the real functions are known; false while they are being found
// (the caller then serves itself from the arena).
CALLSCOPE_NOINSTR bool resolved() {
  int s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (__builtin_expect(s == kResolved, 1)) return true;
  if (s == kUnresolved) {
    int expected = kUnresolved;
    if (__atomic_compare_exchange_n(&g_state, &expected, kResolving, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      resolve_now();
      __atomic_store_n(&g_state, kResolved, __ATOMIC_RELEASE);
      return true;
    }
  }
  return false;  // being resolved, by us (dlsym allocating) or another thread: the arena serves
}

// An allocation's path, when the program has no hooks to tell it (record
// --unwind): the walk's own allocations, if any, are ours.
CALLSCOPE_NOINSTR __attribute__((noinline)) void tell_unwound(fmt_op op, const void* p, size_t size) {
  uint64_t fns[callscope::rt::kMaxUnwoundFrames], sites[callscope::rt::kMaxUnwoundFrames];
  // The walk may set errno (libunwind's probe of memory through a pipe,
  // pthread_getattr_np's reads); a failed realloc's caller reads it.
  const int saved_errno = errno;
  ++t_quiet;
  const uint32_t n = callscope::rt::unwind_here(fns, sites);
  --t_quiet;
  errno = saved_errno;
  callscope_rt_memory_path(static_cast<unsigned>(op), p, size, fns, sites, n);
}

CALLSCOPE_NOINSTR inline void tell(fmt_op op, const void* p, size_t size) {
  if (!callscope_rt_memory || t_quiet) return;
  // Frees go where the thread's last allocation was: a free's path is not
  // unwound (it would double the cost for a mismatch's second path).
  if (__builtin_expect(callscope::rt::unwind_mode() != callscope::rt::UnwindMode::kOff, 0) &&
      !callscope::format::alloc_op_frees(static_cast<uint8_t>(op)) && callscope_rt_memory_path) {
    tell_unwound(op, p, size);
    return;
  }
  callscope_rt_memory(static_cast<unsigned>(op), p, size);
}

CALLSCOPE_NOINSTR inline void told_alloc(fmt_op op, const void* p, size_t size) {
  if (p) tell(op, p, size);
}



}  // namespace

// --- the C allocator ---------------------------------------------------------

CALLSCOPE_MEM_EXPORT void* malloc(size_t n) {
  if (!resolved() || !g_real.malloc) return arena_alloc(n);
  void* p = g_real.malloc(n);
  told_alloc(fmt_op::kMalloc, p, n);
  return p;
}

CALLSCOPE_MEM_EXPORT void free(void* p) {
  if (!p || in_arena(p)) return;
  tell(fmt_op::kFree, p, 0);
  if (resolved() && g_real.free) g_real.free(p);
}

CALLSCOPE_MEM_EXPORT void* calloc(size_t n, size_t size) {
  if (!resolved() || !g_real.calloc) {
    if (size && n > SIZE_MAX / size) return nullptr;
    return arena_alloc(n * size);  // static memory: already zero
  }
  void* p = g_real.calloc(n, size);
  told_alloc(fmt_op::kCalloc, p, n * size);
  return p;
}

CALLSCOPE_MEM_EXPORT void* realloc(void* old, size_t n) {
  if (!resolved() || !g_real.realloc || in_arena(old)) {
    // From the arena (or to the real allocator once known): a copy.
    void* p = resolved() && g_real.malloc ? g_real.malloc(n) : arena_alloc(n);
    if (p && old) {
      const size_t room = static_cast<size_t>(g_arena + sizeof g_arena - static_cast<char*>(old));
      memcpy(p, old, n < room ? n : room);
    }
    if (p && !in_arena(p)) told_alloc(fmt_op::kRealloc, p, n);
    return p;
  }
  // The old block is told freed first (another thread may get it as soon
  // as realloc returns); a realloc that fails leaves it allocated: told
  // again, as a block of unknown size (0).
  if (old) tell(fmt_op::kReallocFree, old, 0);
  void* p = g_real.realloc(old, n);
  if (p) {
    tell(fmt_op::kRealloc, p, n);
  } else if (old && n) {
    tell(fmt_op::kMoveFailed, old, 0);
  }
  return p;
}

CALLSCOPE_MEM_EXPORT void* reallocarray(void* old, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  // glibc's reallocarray calls realloc (ours, through the PLT): the real
  // realloc directly, told once, as reallocarray.
  if (!resolved() || !g_real.realloc || in_arena(old)) return realloc(old, n * size);
  if (old) tell(fmt_op::kReallocFree, old, 0);
  void* p = g_real.realloc(old, n * size);
  if (p) {
    tell(fmt_op::kReallocArray, p, n * size);
  } else if (old && n * size != 0) {
    tell(fmt_op::kMoveFailed, old, 0);
  }
  return p;
}

CALLSCOPE_MEM_EXPORT int posix_memalign(void** out, size_t align, size_t n) {
  if (!resolved() || !g_real.posix_memalign) {
    void* p = arena_alloc(n, align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  const int rc = g_real.posix_memalign(out, align, n);
  if (rc == 0) told_alloc(fmt_op::kPosixMemalign, *out, n);
  return rc;
}

CALLSCOPE_MEM_EXPORT void* aligned_alloc(size_t align, size_t n) {
  if (!resolved() || !g_real.aligned_alloc) return arena_alloc(n, align);
  void* p = g_real.aligned_alloc(align, n);
  told_alloc(fmt_op::kAlignedAlloc, p, n);
  return p;
}

CALLSCOPE_MEM_EXPORT void* memalign(size_t align, size_t n) {
  if (!resolved() || !g_real.memalign) return arena_alloc(n, align);
  void* p = g_real.memalign(align, n);
  told_alloc(fmt_op::kMemalign, p, n);
  return p;
}

CALLSCOPE_MEM_EXPORT void* valloc(size_t n) {
  if (!resolved() || !g_real.valloc) return arena_alloc(n, 4096);
  void* p = g_real.valloc(n);
  told_alloc(fmt_op::kValloc, p, n);
  return p;
}

CALLSCOPE_MEM_EXPORT void* pvalloc(size_t n) {
  if (!resolved() || !g_real.pvalloc) return arena_alloc((n + 4095) & ~size_t{4095}, 4096);
  void* p = g_real.pvalloc(n);
  told_alloc(fmt_op::kPvalloc, p, (n + 4095) & ~size_t{4095});
  return p;
}

// --- anonymous mappings --------------------------------------------------------
// mmap is told when it maps anonymous memory (MAP_ANONYMOUS, not MAP_FIXED
// over a mapping that is already there: that replaces pages, it is no new
// block), munmap always (the analysis keeps the mappings it saw made and
// leaves the others: files, the loader's, the thread stacks glibc maps
// itself), mremap as the old mapping gone and the new one made. glibc's
// malloc maps its big blocks and arenas through its own internal calls,
// which come nowhere near these: they are counted once, as malloc's.
// Until the real functions are known (dlsym allocating), the system calls.

CALLSCOPE_MEM_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  void* p = resolved() && g_real.mmap ? g_real.mmap(addr, len, prot, flags, fd, off)
                                      : reinterpret_cast<void*>(::syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_FIXED)) tell(fmt_op::kMmap, p, len);
  return p;
}

CALLSCOPE_MEM_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

CALLSCOPE_MEM_EXPORT int munmap(void* addr, size_t len) {
  tell(fmt_op::kMunmap, addr, 0);
  if (resolved() && g_real.munmap) return g_real.munmap(addr, len);
  return static_cast<int>(::syscall(SYS_munmap, addr, len));
}

constexpr int kDontUnmap = 4;  // MREMAP_DONTUNMAP (Linux 5.7; not in every libc's headers)

CALLSCOPE_MEM_EXPORT void* mremap(void* old, size_t old_len, size_t len, int flags, ...) {
  void* want = nullptr;
  if (flags & MREMAP_FIXED) {
    __builtin_va_list ap;
    __builtin_va_start(ap, flags);
    want = __builtin_va_arg(ap, void*);
    __builtin_va_end(ap);
  }
  // MREMAP_DONTUNMAP keeps the old mapping (emptied): no free of it.
  const bool frees_old = !(flags & kDontUnmap);
  if (frees_old) tell(fmt_op::kMremapFree, old, 0);
  void* p = resolved() && g_real.mremap
                ? g_real.mremap(old, old_len, len, flags, want)
                : reinterpret_cast<void*>(::syscall(SYS_mremap, old, old_len, len, flags, want));
  if (p != MAP_FAILED) tell(fmt_op::kMremap, p, len);
  else if (frees_old) tell(fmt_op::kMoveFailed, old, 0);  // the old mapping is still there
  return p;
}

// --- operator new and delete -------------------------------------------------
// Declared by their mangled names: no C++ library header here. operator new
// is done here as the C++ library does it -- the allocator, the new-handler
// loop -- rather than by calling the library's: its forms call one another
// (nothrow new[] calls new[], which calls new), and each would be told. When
// no memory is left and no handler, the library's own form is called: it
// fails too, and throws std::bad_alloc as that library throws it (libstdc++
// or libc++). A new-handler that throws inside a nothrow new is not caught
// here (the exception leaves the nothrow new).
//
// A program that replaces the basic operator new or delete (defines them
// itself) keeps them: then every form goes to the library's, which calls
// the program's (as the standard wants), and nothing is told as new or
// delete -- the program's own malloc and free are.

namespace {

enum NewForm : int {
  kNw, kNa, kNwNothrow, kNaNothrow, kNwAlign, kNaAlign, kNwAlignNothrow, kNaAlignNothrow,
  kDl, kDa, kDlSized, kDaSized, kDlAlign, kDaAlign, kDlSizedAlign, kDaSizedAlign, kDlNothrow, kDaNothrow,
  kDlAlignNothrow, kDaAlignNothrow, kFormCount
};
constexpr const char* kFormNames[kFormCount] = {
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvm",
    "_ZdaPvm", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t"};
void* g_next[kFormCount];        // the C++ library's forms
bool g_program_replaces = false;  // the program defines the basic new or delete itself
using HandlerFn = void (*)();
using GetHandlerFn = HandlerFn (*)();
GetHandlerFn g_get_new_handler = nullptr;
int g_new_state = kUnresolved;

// Once, after the C allocator (resolved()): the library's forms and whether
// the program replaced the basic ones (its definition comes before ours).
CALLSCOPE_NOINSTR void resolve_new() {
  if (__atomic_load_n(&g_new_state, __ATOMIC_ACQUIRE) == kResolved) return;
  ++t_quiet;
  for (int f = 0; f < kFormCount; ++f) g_next[f] = ::dlsym(RTLD_NEXT, kFormNames[f]);
  find(g_get_new_handler, "_ZSt15get_new_handlerv");
  // The first definition of each basic form in the global scope: ours (we
  // are preloaded before the C++ library), or the program's own.
  Dl_info ours{};
  if (::dladdr(reinterpret_cast<void*>(&resolve_new), &ours)) {
    constexpr NewForm kBasic[] = {kNw, kNa, kDl, kDa};
    for (NewForm f : kBasic) {
      Dl_info first{};
      void* sym = ::dlsym(RTLD_DEFAULT, kFormNames[f]);
      if (sym && ::dladdr(sym, &first) && first.dli_fbase != ours.dli_fbase) g_program_replaces = true;
    }
  }
  --t_quiet;
  __atomic_store_n(&g_new_state, kResolved, __ATOMIC_RELEASE);
}

// nullptr when no memory is left and there is no new-handler (the caller
// then lets the library's form fail and throw, or returns nullptr).
CALLSCOPE_NOINSTR void* new_(size_t n, size_t align, fmt_op op) {
  if (n == 0) n = 1;
  for (;;) {
    void* p = nullptr;
    if (align <= 16) {
      p = resolved() && g_real.malloc ? g_real.malloc(n) : arena_alloc(n);
    } else if (resolved() && g_real.posix_memalign) {
      if (g_real.posix_memalign(&p, align, n) != 0) p = nullptr;
    } else {
      p = arena_alloc(n, align);
    }
    if (p) {
      if (!in_arena(p)) tell(op, p, n);
      return p;
    }
    const HandlerFn handler = g_get_new_handler ? g_get_new_handler() : nullptr;
    if (!handler) return nullptr;
    handler();
  }
}

CALLSCOPE_NOINSTR void delete_(void* p, fmt_op op) {
  if (!p || in_arena(p)) return;
  tell(op, p, 0);
  if (resolved() && g_real.free) g_real.free(p);
}

template <class... A>
CALLSCOPE_NOINSTR void* library_new(NewForm f, A... a) {
  if (!g_next[f]) __builtin_trap();  // C++'s new without a C++ library: cannot be
  return reinterpret_cast<void* (*)(A...)>(g_next[f])(a...);
}

template <class... A>
CALLSCOPE_NOINSTR void library_delete(NewForm f, A... a) {
  if (g_next[f]) reinterpret_cast<void (*)(A...)>(g_next[f])(a...);
}

}  // namespace

// The throwing forms: ours, else the library's (which throws); nothrow ones
// return nullptr.
#define CALLSCOPE_NEW(NAME, FORM, OP, ALIGN_EXPR, NOTHROW, ...)               \
  CALLSCOPE_MEM_EXPORT void* NAME(__VA_ARGS__) {                             \
    resolve_new();                                                           \
    if (g_program_replaces) return library_new(FORM, CALLSCOPE_ARGS_##FORM); \
    if (void* p = new_(n, ALIGN_EXPR, OP)) return p;                         \
    return NOTHROW ? nullptr : library_new(FORM, CALLSCOPE_ARGS_##FORM);     \
  }
#define CALLSCOPE_ARGS_kNw n
#define CALLSCOPE_ARGS_kNa n
#define CALLSCOPE_ARGS_kNwNothrow n, tag
#define CALLSCOPE_ARGS_kNaNothrow n, tag
#define CALLSCOPE_ARGS_kNwAlign n, align
#define CALLSCOPE_ARGS_kNaAlign n, align
#define CALLSCOPE_ARGS_kNwAlignNothrow n, align, tag
#define CALLSCOPE_ARGS_kNaAlignNothrow n, align, tag

CALLSCOPE_NEW(_Znwm, kNw, fmt_op::kNew, 0, false, size_t n)
CALLSCOPE_NEW(_Znam, kNa, fmt_op::kNewArray, 0, false, size_t n)
CALLSCOPE_NEW(_ZnwmRKSt9nothrow_t, kNwNothrow, fmt_op::kNew, 0, true, size_t n, const void* tag)
CALLSCOPE_NEW(_ZnamRKSt9nothrow_t, kNaNothrow, fmt_op::kNewArray, 0, true, size_t n, const void* tag)
CALLSCOPE_NEW(_ZnwmSt11align_val_t, kNwAlign, fmt_op::kNew, align, false, size_t n, size_t align)
CALLSCOPE_NEW(_ZnamSt11align_val_t, kNaAlign, fmt_op::kNewArray, align, false, size_t n, size_t align)
CALLSCOPE_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, kNwAlignNothrow, fmt_op::kNew, align, true, size_t n, size_t align,
              const void* tag)
CALLSCOPE_NEW(_ZnamSt11align_val_tRKSt9nothrow_t, kNaAlignNothrow, fmt_op::kNewArray, align, true, size_t n,
              size_t align, const void* tag)

// delete, delete[]: plain, sized, aligned, sized and aligned, nothrow.
#define CALLSCOPE_DELETE(NAME, FORM, OP, ...)                     \
  CALLSCOPE_MEM_EXPORT void NAME(__VA_ARGS__) {                   \
    resolve_new();                                                \
    if (g_program_replaces) return library_delete(FORM, CALLSCOPE_DARGS_##FORM); \
    delete_(p, OP);                                               \
  }
#define CALLSCOPE_DARGS_kDl p
#define CALLSCOPE_DARGS_kDa p
#define CALLSCOPE_DARGS_kDlSized p, n
#define CALLSCOPE_DARGS_kDaSized p, n
#define CALLSCOPE_DARGS_kDlAlign p, a
#define CALLSCOPE_DARGS_kDaAlign p, a
#define CALLSCOPE_DARGS_kDlSizedAlign p, n, a
#define CALLSCOPE_DARGS_kDaSizedAlign p, n, a
#define CALLSCOPE_DARGS_kDlNothrow p, tag
#define CALLSCOPE_DARGS_kDaNothrow p, tag
#define CALLSCOPE_DARGS_kDlAlignNothrow p, a, tag
#define CALLSCOPE_DARGS_kDaAlignNothrow p, a, tag

CALLSCOPE_DELETE(_ZdlPv, kDl, fmt_op::kDelete, void* p)
CALLSCOPE_DELETE(_ZdaPv, kDa, fmt_op::kDeleteArray, void* p)
CALLSCOPE_DELETE(_ZdlPvm, kDlSized, fmt_op::kDelete, void* p, size_t n)
CALLSCOPE_DELETE(_ZdaPvm, kDaSized, fmt_op::kDeleteArray, void* p, size_t n)
CALLSCOPE_DELETE(_ZdlPvSt11align_val_t, kDlAlign, fmt_op::kDelete, void* p, size_t a)
CALLSCOPE_DELETE(_ZdaPvSt11align_val_t, kDaAlign, fmt_op::kDeleteArray, void* p, size_t a)
CALLSCOPE_DELETE(_ZdlPvmSt11align_val_t, kDlSizedAlign, fmt_op::kDelete, void* p, size_t n, size_t a)
CALLSCOPE_DELETE(_ZdaPvmSt11align_val_t, kDaSizedAlign, fmt_op::kDeleteArray, void* p, size_t n, size_t a)
CALLSCOPE_DELETE(_ZdlPvRKSt9nothrow_t, kDlNothrow, fmt_op::kDelete, void* p, const void* tag)
CALLSCOPE_DELETE(_ZdaPvRKSt9nothrow_t, kDaNothrow, fmt_op::kDeleteArray, void* p, const void* tag)
CALLSCOPE_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, kDlAlignNothrow, fmt_op::kDelete, void* p, size_t a,
                 const void* tag)
CALLSCOPE_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, kDaAlignNothrow, fmt_op::kDeleteArray, void* p, size_t a,
                 const void* tag)

// The runtime asks, when it sets up the process: are the frames unwound
// here (it then ignores hooks, and says so in the trace)?
CALLSCOPE_MEM_EXPORT int callscope_mem_unwind_mode() {
  callscope::rt::unwind_configure();
  return static_cast<int>(callscope::rt::unwind_mode());
}

namespace {

// Everything found at load time, before any thread of the program runs: a
// first operator new later must not take the loader's lock (a dlopen's
// constructor waiting on that thread would deadlock).
__attribute__((constructor(101))) CALLSCOPE_NOINSTR void mem_constructor() {
  callscope::rt::unwind_configure();
  (void)resolved();
  resolve_new();
}

}  // namespace
