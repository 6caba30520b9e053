/* String instructions with known registers: rep stosq zeroes an array, rep movsb copies forwards, std; rep movsb
 * copies backwards, a lone stosb stores one byte.  Each writes only its own area: a value stored before them and
 * read after (sentinel) stays what it was across them.  Build: gcc -O0 -no-pie. */
#include <stddef.h>

volatile long sentinel;
long big[64];
char source[200], copy[200], shifted[208];

__attribute__((noinline)) void the_end(void) { __asm__ volatile(""); }

static void fill(void *to, long value, size_t count) {
  __asm__ volatile("cld; rep stosq" : "+D"(to), "+c"(count) : "a"(value) : "memory");
}

static void forwards(void *to, const void *from, size_t count) {
  __asm__ volatile("cld; rep movsb" : "+D"(to), "+S"(from), "+c"(count) : : "memory");
}

static void backwards(void *to, const void *from, size_t count) {
  to = (char *)to + count - 1;
  from = (const char *)from + count - 1;
  __asm__ volatile("std; rep movsb; cld" : "+D"(to), "+S"(from), "+c"(count) : : "memory");
}

int main(void) {
  sentinel = 0x1122334455667788;
  for (int i = 0; i < 200; i++)
    source[i] = (char)(i * 7);
  fill(big, 0, 64);
  forwards(copy, source, sizeof copy);
  backwards(shifted + 8, source, sizeof source);
  char *at = copy + 3;
  __asm__ volatile("cld; stosb" : "+D"(at) : "a"(0x5a) : "memory");
  long total = sentinel + big[5] + copy[3] + shifted[20];
  the_end();
  return (int)total;
}
