/* Single thread: loops, recursion, function pointers, a jump table, libc calls
 * (through the PLT, with a callback from qsort) and syscalls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static int twice(int x) { return 2 * x; }
static int square(int x) { return x * x; }
static int (*const operations[])(int) = {twice, square};

static int jump_table(int v) {
  switch (v) {
  case 0: return 10;
  case 1: return 21;
  case 2: return 32;
  case 3: return 43;
  case 4: return 54;
  case 5: return 65;
  default: return -1;
  }
}

static int by_value(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(void) {
  int sum = 0;
  for (int i = 0; i < 6; i++)
    sum += operations[i & 1](i) + jump_table(i);
  sum += fib(7);
  int numbers[] = {5, 3, 9, 1, 7};
  qsort(numbers, 5, sizeof numbers[0], by_value);
  char text[64];
  memset(text, 'x', sizeof text - 1);
  text[sizeof text - 1] = 0;
  sum += (int)strlen(text) + numbers[0] + (int)(getpid() > 0);
  printf("sum %d\n", sum);
  return 0;
}
