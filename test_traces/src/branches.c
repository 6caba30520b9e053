/* Every kind of branch the live recorder evaluates from registers, with no library calls,
 * so a ptrace single-step recording of main is independent ground truth:
 * signed and unsigned compares (each jcc condition), returns from recursion,
 * a switch through a jump table (indirect jmp) and calls through a function pointer. */
#ifndef N
#define N 24
#endif

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

__attribute__((noinline)) int depth(int n) { return n <= 1 ? n : depth(n - 1) + depth(n - 2); }

__attribute__((noinline)) int twice(int x) { return 2 * x; }
__attribute__((noinline)) int negate(int x) { return -x; }
__attribute__((noinline)) int square(int x) { return x * x; }

__attribute__((noinline)) int pick(int k, int x) {
  switch (k % 7) {
  case 0: return x + 1;
  case 1: return x - 3;
  case 2: return x * 5;
  case 3: return x ^ 0x55;
  case 4: return x << 2;
  case 5: return x >> 1;
  default: return ~x;
  }
}

int main(void) {
  int (*const ops[])(int) = {twice, negate, square};
  volatile int acc = 0;
  for (int i = -N; i < N; i++) {
    unsigned u = (unsigned)i * 2654435761u;
    if (i < -3) acc += 1;          /* signed less */
    if (i >= 5) acc -= 2;          /* signed greater-or-equal */
    if (u > 0x80000000u) acc ^= 3; /* unsigned above */
    if (u <= 12345u) acc += 7;     /* unsigned below-or-equal */
    if ((i & 3) == 0) acc += ops[(i + N) % 3](i); /* indirect call */
    acc += pick(i + N, i);         /* jump table */
    int a = (int)u, b = (int)(u * 3u);
    if (a < b) acc += 11;          /* signed compares that overflow: jl/jge need OF */
    if (a > b) acc -= 13;          /* jg/jle */
    double d = i * 0.5;
    if (d == 2.0) acc += 17;       /* floating equality: jp (unordered) and jne */
    if (acc & 0x100) acc = -acc;   /* sign flips: js/jns, jl/jg on negatives */
  }
  acc += depth(9);                 /* deep returns */
  finished();
  return acc & 1;
}
