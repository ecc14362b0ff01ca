/* callscope's public C API: control profiling from inside the program.
 *
 * Link with -lcallscope-stub (no-ops, the program runs at full speed without
 * callscope) or with -lcallscope-rt. Under `callscope record` the runtime is
 * preloaded and these calls reach it whichever library the program linked.
 *
 * Every function is safe to call from any thread, at any time, also before
 * the first instrumented call and from a program that is not traced (then
 * they do nothing and return 0). None of them is instrumented.
 */
#ifndef CALLSCOPE_CALLSCOPE_H
#define CALLSCOPE_CALLSCOPE_H

#ifdef __cplusplus
extern "C" {
#endif

#define CALLSCOPE_API_VERSION 2

/* Turns profiling (or recording) on for every thread. Calls already in
 * progress when it turns on are not counted; calls made from there on are,
 * placed under the outermost function seen since. */
void callscope_start(void) __attribute__((no_instrument_function));

/* Turns it off for every thread: hooks do nothing until callscope_start(). */
void callscope_stop(void) __attribute__((no_instrument_function));

/* Profile mode: sets every count, time and extreme of every thread to zero.
 * Call paths seen so far are kept, with nothing in them. */
void callscope_clear(void) __attribute__((no_instrument_function));

/* Profile mode: writes a timestamped snapshot of every thread's call tree
 * into the trace; `callscope report --dump K` shows snapshot K. Returns the
 * snapshot's number (1, 2, ...), or 0 when nothing was written. */
int callscope_dump(void) __attribute__((no_instrument_function));

/* Puts a named point in the timeline: in the events of the calling thread
 * (replay shows it) and in the trace's list of marks (info shows it).
 * `text` is copied; at most 255 bytes of it are kept. */
void callscope_mark(const char* text) __attribute__((no_instrument_function));

/* Memory (`callscope record --memory`; no-ops otherwise). See docs/memory.md.
 *
 * A program's own allocator (a pool, an arena, a free list): tell each block
 * it hands out and each it takes back. They are counted as their own family
 * ("callscope_alloc"), beside the malloc'd memory the pool itself may hold,
 * so a pool carved out of malloc'd memory is counted in both. */
void callscope_alloc(const void* ptr, unsigned long size) __attribute__((no_instrument_function));
void callscope_free(const void* ptr) __attribute__((no_instrument_function));

/* Tags (WPA's pool tags): every allocation the calling thread makes between
 * a push and its pop is counted under the tag (the innermost one pushed);
 * `callscope memory --by tag` groups by it. Tags nest per thread. The text
 * is copied (at most 63 bytes); the same text is the same tag. */
void callscope_tag_push(const char* tag) __attribute__((no_instrument_function));
void callscope_tag_pop(void) __attribute__((no_instrument_function));

#ifdef __cplusplus
}

/* C++: a tag for the rest of the scope. */
struct callscope_tag_scope {
  explicit callscope_tag_scope(const char* tag) __attribute__((no_instrument_function)) { callscope_tag_push(tag); }
  ~callscope_tag_scope() __attribute__((no_instrument_function)) { callscope_tag_pop(); }
  callscope_tag_scope(const callscope_tag_scope&) = delete;
  callscope_tag_scope& operator=(const callscope_tag_scope&) = delete;
};
#endif

#endif /* CALLSCOPE_CALLSCOPE_H */
