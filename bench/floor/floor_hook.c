/* The floor for the cost of a -finstrument-functions hook: each hook reads
 * the TSC and stores the value into a thread-local ring, nothing else (no
 * function address, no shadow stack, no file). A traced call costs two of
 * these: "reads the TSC twice and stores the values".
 *
 * Built by bench/run.sh two ways:
 *  - libfloor_hook.so, preloaded with LD_PRELOAD into the -finstrument-functions
 *    build: the same mechanics as libcallscope-rt.so (call through the PLT
 *    into a preloaded library, initial-exec TLS);
 *  - compiled into the program itself (FLOOR_STATIC): direct calls, to show
 *    what the PLT path costs.
 *
 * The ring's last slot is exported through floor_sink so the stores cannot be
 * proven dead. */
#include <stdint.h>

#define FLOOR_RING 8192u /* words: 64 KiB of static TLS, a power of two */

#ifdef FLOOR_STATIC
#define FLOOR_TLS __attribute__((tls_model("local-exec")))
#else
#define FLOOR_TLS __attribute__((tls_model("initial-exec")))
#endif

static __thread uint64_t ring[FLOOR_RING] FLOOR_TLS;
static __thread unsigned ring_pos FLOOR_TLS;

__attribute__((no_instrument_function, always_inline)) static inline void floor_store(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  unsigned p = ring_pos;
  ring[p & (FLOOR_RING - 1)] = ((uint64_t)hi << 32) | lo;
  ring_pos = p + 1;
}

__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_enter(void* fn, void* site) {
  (void)fn;
  (void)site;
  floor_store();
}

__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_exit(void* fn, void* site) {
  (void)fn;
  (void)site;
  floor_store();
}

__attribute__((visibility("default"), no_instrument_function)) uint64_t floor_sink(void) {
  return ring[(ring_pos - 1) & (FLOOR_RING - 1)];
}
