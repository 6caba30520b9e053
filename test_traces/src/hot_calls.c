/* The time-travel benchmark's program (benchmarks/history.py): a hot loop calling small
 * functions, 29 instructions per call at -O0 (the shape of a real program's inner loops).
 * N iterations of the outer loop make 500*N iterations of the inner one, each of 58
 * instructions and 2 calls (step, which calls mix): N=1000 is 29.0 million instructions
 * and 1.0 million calls.  finished() marks the end for the recorders (b finished). */
#ifndef N
#define N 1000
#endif

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

__attribute__((noinline)) unsigned mix(unsigned x) { return (x * 2654435761u) ^ (x >> 7); }

__attribute__((noinline)) unsigned step(unsigned x, unsigned k) {
  unsigned y = mix(x + k);
  y ^= y >> 13;
  y += k * 5 + x + 7;
  y = (y << 3) | (y >> 29);
  y -= (x >> 2) ^ k;
  return k & 1 ? y : y + 1;
}

int main(void) {
  volatile unsigned acc = 0;
  for (unsigned i = 0; i < N; i++)
    for (unsigned k = 0; k < 500; k++)
      acc += step(i, k);
  finished();
  return acc & 1;
}
