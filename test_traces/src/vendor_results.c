/* Integer instructions whose result unicorn computes otherwise than the CPU: a 32-bit cmpxchg that succeeds leaves
 * rax whole, one that fails leaves its register destination's upper half (on Intel); bsf of 0 leaves its
 * destination as it was (undefined, says Intel); a 32-bit shift or rotate by 0 may or may not zero-extend.  And a
 * bts of memory by a register, whose bit offset picks a word past its operand.  Each result is stored, then
 * every trace of it is overwritten, so that only the instructions could tell it.  Build: gcc -O1 -no-pie. */
#include <stdint.h>

uint64_t inputs[4] = {0x1234567800000005ULL, 0, 0xffffffff80000000ULL, 0xdeadbeefcafebabeULL};
uint64_t results[6];
uint64_t bits[4] = {1, 2, 3, 4};

__attribute__((noinline)) void the_end(void) { __asm__ volatile(""); }

__attribute__((noinline)) static void compute(void) {
  __asm__ volatile(
      "mov inputs+0(%%rip), %%r12\n\t"
      "mov inputs+8(%%rip), %%r13\n\t"
      "bsf %%r13d, %%r12d\n\t" /* a source of 0 */
      "mov %%r12, results+0(%%rip)\n\t"
      "mov inputs+0(%%rip), %%rax\n\t"
      "mov inputs+24(%%rip), %%r15\n\t"
      "mov inputs+16(%%rip), %%rdx\n\t"
      "cmpxchg %%edx, %%r15d\n\t" /* eax differs from r15d: fails */
      "mov %%r15, results+8(%%rip)\n\t"
      "mov inputs+24(%%rip), %%rax\n\t"
      "mov inputs+24(%%rip), %%r14\n\t"
      "cmpxchg %%edx, %%r14d\n\t" /* eax equals r14d: succeeds */
      "mov %%rax, results+16(%%rip)\n\t"
      "mov inputs+24(%%rip), %%r11\n\t"
      "xor %%ecx, %%ecx\n\t"
      "shl %%cl, %%r11d\n\t" /* by 0 */
      "mov %%r11, results+24(%%rip)\n\t"
      "mov inputs+24(%%rip), %%r10\n\t"
      "rcl %%cl, %%r10d\n\t"
      "mov %%r10, results+32(%%rip)\n\t"
      "lea bits(%%rip), %%rdi\n\t"
      "mov $130, %%rax\n\t"
      "bts %%rax, (%%rdi)\n\t" /* bits[2] |= 4 */
      "mov 16(%%rdi), %%r9\n\t"
      "mov %%r9, results+40(%%rip)\n\t"
      "movq $0, 16(%%rdi)\n\t"
      "xor %%r9d, %%r9d\n\t"
      "xor %%r10d, %%r10d\n\t"
      "xor %%r11d, %%r11d\n\t"
      "xor %%r12d, %%r12d\n\t"
      "xor %%r14d, %%r14d\n\t"
      "xor %%r15d, %%r15d\n\t"
      "xor %%eax, %%eax\n\t"
      "movq $0, results+0(%%rip)\n\t"
      "movq $0, results+8(%%rip)\n\t"
      "movq $0, results+16(%%rip)\n\t"
      "movq $0, results+24(%%rip)\n\t"
      "movq $0, results+32(%%rip)\n\t"
      "movq $0, results+40(%%rip)\n\t" ::
          : "rax", "rcx", "rdx", "rdi", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "memory", "cc");
}

int main(void) {
  compute();
  the_end();
  return 0;
}
