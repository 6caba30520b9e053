/* Callbacks from a library: glibc's qsort (no line information) calls back into compare(), which has
 * it.  History checks: bt inside compare shows qsort's frames between compare and main; step from
 * main's qsort line stops in compare; reverse-step out of compare's first call goes through qsort
 * back to main's calling line.  Build: gcc -O0 -g -static -no-pie. */
#include <stdlib.h>

__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

static int calls;

static int compare(const void *left, const void *right) {
  int a = *(const int *)left;
  int b = *(const int *)right;
  calls++;
  return (a > b) - (a < b);
}

int main(void) {
  int values[6] = {42, 7, 19, 3, 25, 11};
  qsort(values, 6, sizeof values[0], compare);
  the_end();
  return values[0] == 3 && values[5] == 42 ? 0 : 1;
}
