/* popf under a single-stepping recorder: ptrace shows the recorder's TF in rflags from the instruction after a
 * popf on (the kernel takes the TF as the program's then), in its register states and its core.  The program's
 * TF is clear (tests/test_recorder_trap_flag.py).  Build: gcc -O0 -g -no-pie popf_flags.c -o popf_flags */
int main(void) {
  int sum = 5, other = 7;
  __asm__ volatile("pushq $0x203\n\tpopfq\n\tadcl %1, %0" : "+r"(sum) : "r"(other) : "cc"); /* CF set: 5 + 7 + 1 */
  return *(volatile int *)(long)(sum - 13); /* a null dereference: the recording ends in a crash and its core */
}
