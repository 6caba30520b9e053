/* Sums a list, prints the sum with printf, then dereferences a null pointer: from its end core alone, printf's
 * frame is unwound by LLDB at some positions and shown from the trace's calls at others.  gcc -O0 -g. */
#include <stdio.h>
#include <stdlib.h>

struct item {
  long value;
  struct item *next;
};

__attribute__((noinline)) long total(const struct item *item) {
  long sum = 0;
  for (; item; item = item->next)
    sum += item->value;
  return sum;
}

int main(void) {
  struct item *list = NULL;
  for (int i = 0; i < 5; i++) {
    struct item *item = malloc(sizeof *item);
    item->value = 11 * i + 5;
    item->next = list;
    list = item;
  }
  long sum = total(list);
  printf("%ld\n", sum);
  volatile int *nowhere = (int *)(sum & 0xff0);
  return *nowhere;
}
