/* A signal handler that reads a vector register: the kernel starts a handler with the vector state in its
 * initial state (xmm1 = 0 here) and rt_sigreturn restores the interrupted one (main's xmm1 again).  A value
 * recovery that carried xmm1 across the signal would show main's value inside the handler.
 * Build: gcc -O0 -g -Wl,-z,now. */
#include <signal.h>

volatile unsigned long sink;

__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

void on_signal(int signal_number) {
  unsigned long inside;
  __asm__ volatile("movq %%xmm1, %0" : "=r"(inside));
  sink = inside + (unsigned long)signal_number;
}

int main(void) {
  signal(SIGUSR1, on_signal);
  unsigned long known = 0x1234567890abcdefUL;
  __asm__ volatile("movq %0, %%xmm1" ::"r"(known) : "xmm1");
  raise(SIGUSR1);
  unsigned long after;
  __asm__ volatile("movq %%xmm1, %0" : "=r"(after));
  sink = after;
  the_end();
  return 0;
}
