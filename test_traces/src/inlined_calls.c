/* A function inlined into main at -O2, with a real call inside it: `finish` from inside the inlined code leaves it
 * as GDB's does (tests/test_inlined_finish.py).  Build: gcc -O2 -g -no-pie inlined_calls.c -o inlined_calls */
#include <stdio.h>

__attribute__((noinline)) int triple(int x) { return 3 * x + (x & 1); }

static inline __attribute__((always_inline)) int scaled_sum(const int *values, int count) {
  int sum = 0;
  for (int i = 0; i < count; i++)
    sum += triple(values[i]); /* a real call from the inlined code */
  return sum;
}

int main(void) {
  static int values[] = {4, 9, 16, 25};
  int first = triple(1); /* main's own code before the inlined call */
  __asm__ volatile("" ::: "memory");
  int sum = scaled_sum(values, 4);
  printf("%d %d\n", first, sum);
  return sum == 0;
}
