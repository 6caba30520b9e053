/* A fault just after a ret, into a handler that never returns.  bounce's ret goes back to a store through a
 * null pointer; the SIGSEGV it raises is delivered before the store completes, so the trace goes from the ret
 * straight to on_fault, as if the ret had gone there.  on_fault aborts: the recording (and its core) ends in
 * the handler.  Build: gcc -O0. */
#include <signal.h>
#include <stdlib.h>

static volatile long seen;

void bounce(void);
__asm__(".text\n.globl bounce\n.type bounce, @function\nbounce:\n\tret\n.size bounce, .-bounce\n");

static void on_fault(int signal_number) {
  seen += signal_number;
  abort();
}

__attribute__((noinline)) long work(long n) {
  long total = 0;
  for (long i = 0; i < n; i++)
    total += i * 3;
  return total;
}

int main(void) {
  signal(SIGSEGV, on_fault);
  seen = work(50);
  __asm__ volatile("call bounce\n\tmovl $1, 0" ::: "memory");
  return 0;
}
