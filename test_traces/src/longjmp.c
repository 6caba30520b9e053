/* setjmp/longjmp out of six nested frames: main -> level1 -> ... -> level6, which longjmps back to
 * main's setjmp; main then makes more calls.  History checks: after the longjmp, bt shows main alone
 * (level1..level6 are dead), later calls sit one level below main, and reverse-step/reverse-next back
 * across the longjmp land in level6 again.  Build: gcc -O0 -g -static -no-pie. */
#include <setjmp.h>

static jmp_buf escape;

__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

void level6(int depth) {
  longjmp(escape, depth);
}

void level5(int depth) {
  level6(depth + 1);
}

void level4(int depth) {
  level5(depth + 1);
}

void level3(int depth) {
  level4(depth + 1);
}

void level2(int depth) {
  level3(depth + 1);
}

void level1(int depth) {
  level2(depth + 1);
}

int after(int value) {
  return value * 2;
}

int main(void) {
  int depth = setjmp(escape);
  if (depth == 0)
    level1(1);
  int doubled = after(depth);
  the_end();
  return doubled == 12 ? 0 : 1;
}
