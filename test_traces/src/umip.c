/* sgdt in user mode: where the CPU has UMIP, it faults and the kernel runs it for the program, and the single
 * step's trap after it is lost: the thread next stops after the instruction that follows.  Build: gcc -O1. */
#include <stdint.h>

volatile uint64_t sink;
unsigned char table[10];

int main(void) {
  __asm__ volatile("sgdt table(%%rip)\n\t"
                   "mov table(%%rip), %%rax\n\t"
                   "mov %%rax, sink(%%rip)" ::
                       : "rax", "memory");
  return 0;
}
