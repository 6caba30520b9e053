/* Calls into three shared libraries from main, ROUNDS times each, for the call tree's PLT
 * tests: the first call of each function binds lazily through ld.so's resolver, the later
 * ones jump straight through the GOT.  strlen, memcpy and cos are IFUNCs: the function that
 * runs is a variant chosen for the CPU (__strlen_avx2, __cos_fma...).  Build with
 * -fno-builtin so that gcc calls them rather than inlining them; zlib is used when its
 * header is installed (link with -lz then). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if __has_include(<zlib.h>)
#include <zlib.h>
#endif

#define ROUNDS 3

int main(int argc, char **argv) {
  volatile double x = 0.5;
  unsigned long total = 0;
  const char *text = argc > 1 ? argv[1] : "a call tree across shared libraries";
  for (int round = 0; round < ROUNDS; round++) {
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    memcpy(copy, text, n + 1);
    total += (unsigned long)(cos(x + round) * 1000);
    total += (unsigned long)(exp(x) * 10);
#if __has_include(<zlib.h>)
    total += crc32(0, (const unsigned char *)copy, n);
    total += adler32(1, (const unsigned char *)copy, n);
#endif
    free(copy);
  }
  return total == 0; /* always 0: total is never 0 */
}
