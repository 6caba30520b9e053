/* A fault handler that mends the state and returns: the faulting load runs again.  The kernel saves the flags
 * with RF set at a fault, and rt_sigreturn restores them so; the next instruction done clears RF.  Then two
 * signals both pending, delivered at one instruction: the kernel writes both frames before either handler
 * runs.  Build: gcc -O0 -g. */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <ucontext.h>

volatile long good = 0x1234567887654321;
volatile int order[4];
volatile int delivered;

static void mend(int number, siginfo_t *info, void *context) {
  (void)number, (void)info;
  ((ucontext_t *)context)->uc_mcontext.gregs[REG_RBX] = (long)&good; /* the load's pointer: retry it */
}

static void first(int number) { order[delivered++] = number; }
static void second(int number) { order[delivered++] = number * 10; }

__attribute__((noinline)) long load_through(long *pointer) {
  long out;
  __asm__ volatile("mov %1, %%rbx\n\tmov (%%rbx), %0" : "=r"(out) : "r"(pointer) : "rbx", "memory");
  return out;
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = mend;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &action, 0);
  long total = load_through(0);
  signal(SIGUSR1, first);
  signal(SIGUSR2, second);
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGUSR1);
  sigaddset(&both, SIGUSR2);
  sigprocmask(SIG_BLOCK, &both, 0);
  raise(SIGUSR1);
  raise(SIGUSR2);
  sigprocmask(SIG_UNBLOCK, &both, 0); /* both delivered here, at once */
  return total == good && delivered == 2 ? 0 : 1;
}
