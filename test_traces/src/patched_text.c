/* Patches its own code while it runs: the constant that add_constant adds is rewritten in the text (made
 * writable with mprotect), so the instruction that runs the second time is not the file's.  Build: gcc -O2 -g. */
#include <stdint.h>
#include <sys/mman.h>

long results[2];

__attribute__((noinline)) long add_constant(long x) { return x + 0x11111111; }

int main(void) {
  results[0] = add_constant(5);
  unsigned char *code = (unsigned char *)add_constant;
  uintptr_t page = (uintptr_t)code & ~(uintptr_t)4095;
  mprotect((void *)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC);
  for (int i = 0; i < 32; i++) {
    if (code[i] == 0x11 && code[i + 1] == 0x11 && code[i + 2] == 0x11 && code[i + 3] == 0x11) {
      code[i] = code[i + 1] = code[i + 2] = code[i + 3] = 0x22;
      break;
    }
  }
  results[1] = add_constant(results[0]); /* 0x11111116 + 0x22222222 */
  return results[1] == 0x33333338 ? 0 : 1;
}
