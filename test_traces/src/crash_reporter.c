/* A crash reporter's pattern: a SIGSEGV handler (SA_RESETHAND) logs and returns, the store faults again and the
 * default action writes the core.  The trace ends with the handler's rt_sigreturn, the core at the faulting store:
 * where rt_sigreturn returned, not after its syscall.  Build: gcc -O0 -g. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

volatile int logged;

static void on_crash(int signal) {
  (void)signal;
  logged++;
  write(2, "crash logged\n", 13);
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_crash;
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGSEGV, &action, 0);
  volatile int *nowhere = (int *)0x10;
  *nowhere = 42;
  return 0;
}
