/* The CPU a thread runs on, read from its rseq area, which the kernel rewrites whenever the thread moves (glibc
 * 2.35 on registers one per thread): pinned to CPU 0, 1, 0, ... in turn, sched_getcpu() reads 0, 1, 0, ...  Only
 * the last value is left for a core to hold.  Exits 2 with fewer than two CPUs.  Build: gcc -O2 -g -static. */
#define _GNU_SOURCE
#include <sched.h>

volatile int seen;

int main(void) {
  for (int i = 0; i < 6; i++) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(i & 1, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
      return 2;
    seen = sched_getcpu(); /* overwritten by the next turn's */
  }
  *(volatile int *)0 = seen; /* crash: the core */
  return 0;
}
