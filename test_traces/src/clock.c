/* Reads the clock through the vdso a few times: its code retries until it reads the time within one
 * kernel tick, which a recorder that stops at every branch never manages (the live recorder runs it
 * untraced, at full speed). */
#include <time.h>

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

int main(void) {
  struct timespec now;
  long odd = 0;
  for (int i = 0; i < 3; i++) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    odd += now.tv_nsec & 1;
  }
  finished();
  return (int)odd;
}
