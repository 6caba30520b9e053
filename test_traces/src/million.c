/* Runs well over a million instructions (N=300): nested loops with a data-dependent branch. */
#ifndef N
#define N 300
#endif
/* Where recording benchmarks stop (GDB's record full and ours). */
__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

int main(void) {
  volatile unsigned acc = 0;
  for (unsigned i = 0; i < N; i++)
    for (unsigned j = 0; j < N; j++)
      if ((i ^ j) & 1)
        acc += i * j;
      else
        acc ^= j;
  finished();
  return acc & 1;
}
