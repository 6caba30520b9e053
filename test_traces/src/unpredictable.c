/* Code the live recorder's emulator must not run ahead through, with no library calls, so a
 * ptrace single-step recording of main is independent ground truth: system calls, rdtsc,
 * x87 and (with -DWITH_AVX) VEX instructions, and reads of a shared mapping another process
 * could write.  Between them, loops long enough to run the emulator out of time. */
#ifndef N
#define N 40
#endif

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

static long raw_syscall(long number, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
}

volatile unsigned sink;
volatile long double wide = 1.0L;

__attribute__((noinline)) unsigned mix(unsigned x, unsigned rounds) {
  for (unsigned r = 0; r < rounds; r++)
    x = (x & 1) ? x * 3 + 1 : x / 2;
  return x;
}

int main(void) {
  /* mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) */
  volatile unsigned *shared = (volatile unsigned *)raw_syscall(9, 0, 4096, 3, 0x21, -1, 0);
  shared[0] = 7;
  unsigned acc = 0;
  for (unsigned i = 0; i < N; i++) {
    acc += mix(i + 27, N * 4);
    if (i % 8 == 0)
      acc += raw_syscall(39, 0, 0, 0, 0, 0, 0) & 0; /* getpid */
    if (i % 8 == 3) {
      unsigned lo, hi;
      __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
      sink = lo ^ hi;
    }
    if (i % 8 == 5)
      wide = wide * 1.5L;
#ifdef WITH_AVX
    if (i % 8 == 6)
      __asm__ volatile("vpxor %%xmm1, %%xmm1, %%xmm1" ::: "xmm1");
#endif
    if (shared[0] & i)
      acc ^= i;
  }
  sink = acc;
  finished();
  return 0;
}
