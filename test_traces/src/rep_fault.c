/* A `rep movsb` that faults halfway: it copies 8 KiB into a mapping whose second page was unmapped, so the
 * core is taken inside the instruction, with rcx, rsi and rdi halfway.  Build: gcc -O0 -g -static -no-pie. */
#include <sys/mman.h>

static char source[8192];

int main(void) {
  char *page = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(page + 4096, 4096);
  char *from = source;
  unsigned long count = 8192;
  __asm__ volatile("mov %2, %%rcx\n\tlea 0(%0), %%rdi\n\trep movsb"
                   : "+r"(page), "+S"(from), "+r"(count)
                   :
                   : "rcx", "rdi", "memory");
  return 0;
}
