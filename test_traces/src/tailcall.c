/* Tail calls, built with -O2: middle() ends in `return leaf(...)`, which GCC compiles to a jmp, so
 * leaf returns straight to outer and middle's frame is gone while leaf runs.  History checks: bt
 * inside leaf (GDB shows middle as a synthesized "tailcall" frame from the DWARF call-site
 * information; the trace alone sees only outer -> leaf), finish from leaf returns into outer.
 * Build: gcc -O2 -g -static -no-pie (check `objdump -d`: middle ends with `jmp leaf`). */
__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

volatile int seed = 4;

__attribute__((noinline)) int leaf(int value) {
  int squared = value * value;
  return squared + seed;
}

__attribute__((noinline)) int middle(int value) {
  int shifted = value + seed;
  return leaf(shifted);
}

__attribute__((noinline)) int outer(int value) {
  int result = middle(value + 1);
  return result - 1;
}

int main(void) {
  int total = 0;
  for (int round = 0; round < 6; round++)
    total += outer(round + seed);
  the_end();
  return total > 0 ? 0 : 1;
}
