/* libcallscope-stub: the public API as no-ops, so that a program that calls
 * it links and runs at full speed without callscope. Under `callscope record`
 * the preloaded runtime defines the same symbols and takes precedence. */
#include "callscope/callscope.h"

void callscope_start(void) {}
void callscope_stop(void) {}
void callscope_clear(void) {}
int callscope_dump(void) { return 0; }
void callscope_mark(const char* text) { (void)text; }
void callscope_alloc(const void* ptr, unsigned long size) {
  (void)ptr;
  (void)size;
}
void callscope_free(const void* ptr) { (void)ptr; }
void callscope_tag_push(const char* tag) { (void)tag; }
void callscope_tag_pop(void) {}
