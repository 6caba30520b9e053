/* Crashes with a null dereference five calls deep. */
#include <stdio.h>

int *volatile pointer;

int descend(int n) {
  if (n == 0)
    return *pointer;
  return descend(n - 1) + 1;
}

int main(void) {
  puts("about to crash");
  return descend(5);
}
