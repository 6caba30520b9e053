/* Recursion: fact(5) calls itself five levels deep, then fact(3) runs in fresh activations, then
 * fib(5) recurses twice per call (a tree of activations, many of them siblings at the same depth).
 * History checks: finish and reverse-finish leave exactly one activation; reverse-step from a
 * recursive call's return lands on the callee's closing line in the right activation; bt lists
 * every open frame.  Build: gcc -O0 -g -static -no-pie (see test_traces/history/README.md). */
__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

int fact(int n) {
  if (n <= 1)
    return 1;
  return n * fact(n - 1);
}

int fib(int n) {
  if (n < 2)
    return n;
  return fib(n - 1) + fib(n - 2);
}

int main(void) {
  int big = fact(5);
  int small = fact(3);
  int tree = fib(5);
  the_end();
  return big + small + tree == 131 ? 0 : 1;
}
