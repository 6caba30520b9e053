/* Everyday library work for the live recorder: malloc, qsort through a callback, snprintf of
 * a double (SSE), strlen and memcpy (AVX code on most CPUs), strdup, free, and a write to
 * stdout every tenth round (system calls). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ROUNDS
#define ROUNDS 30
#endif

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

static int ascending(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(void) {
  char line[256];
  unsigned long total = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int n = 200 + round;
    int *values = malloc(n * sizeof *values);
    for (int i = 0; i < n; i++)
      values[i] = (i * 7919 + round) % 1000;
    qsort(values, n, sizeof *values, ascending);
    snprintf(line, sizeof line, "round %d: min %d max %d median/3 %f", round, values[0], values[n - 1],
             values[n / 2] / 3.0);
    total += strlen(line);
    char *copy = strdup(line);
    total += copy[3];
    free(copy);
    free(values);
    if (round % 10 == 0) {
      printf("%s\n", line);
      fflush(stdout);
    }
  }
  finished();
  return total & 1;
}
