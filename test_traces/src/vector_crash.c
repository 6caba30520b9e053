/* A 256-bit vector held in a register when the program crashes: its upper half is in the core's XSAVE area, not
 * in the FXSAVE area's xmm registers.  Build: gcc -O2 -g (the crash function is built for AVX2 alone). */
#include <immintrin.h>

float data[16];

__attribute__((noinline, target("avx2"))) void crash(const float *from) {
  __m256 v = _mm256_loadu_ps(from);
  __m256 w = _mm256_mul_ps(v, v);
  __asm__ volatile("" ::"x"(w), "x"(v));
  *(volatile int *)(long)(data[0] - 1) = 1; /* data[0] is 1: a write through a null pointer */
  __asm__ volatile("" ::"x"(w), "x"(v));
}

int main(int argc, char **argv) {
  (void)argv;
  for (int i = 0; i < 16; i++)
    data[i] = i * 1.5f + argc;
  crash(data + 3);
  return 0;
}
