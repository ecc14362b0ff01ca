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

#define CALLSCOPE_API_VERSION 1

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

#ifdef __cplusplus
}
#endif

#endif /* CALLSCOPE_CALLSCOPE_H */
