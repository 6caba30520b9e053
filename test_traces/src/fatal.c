/* Dies of the signal its argument names: "abort" (SIGABRT, raised by a system call), "divide"
 * (SIGFPE) or "ud2" (SIGILL), two calls deep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int volatile zero, hundred = 100;

static int fail(const char *how) {
  if (strcmp(how, "abort") == 0)
    abort();
  if (strcmp(how, "divide") == 0)
    return hundred / zero;
  __asm__ volatile("ud2");
  return 0;
}

static int check(const char *how) { return fail(how) + 1; }

int main(int argc, char **argv) {
  puts("about to fail");
  return check(argc > 1 ? argv[1] : "ud2");
}
