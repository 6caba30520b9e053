/* A timer signal (every 20 ms: slower than the handler runs single-stepped) interrupts a busy loop again and again: the handler counts its own runs,
 * so a recording can be checked for having seen every one of them. */
#include <signal.h>
#include <sys/time.h>

volatile int handled;

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

__attribute__((noinline)) void on_alarm(int signo) {
  if (signo == SIGALRM)
    handled++;
}

int main(void) {
  struct sigaction action = {0};
  action.sa_handler = on_alarm;
  sigaction(SIGALRM, &action, 0);
  struct itimerval every_20ms = {{0, 20000}, {0, 20000}};
  setitimer(ITIMER_REAL, &every_20ms, 0);
  volatile unsigned spin = 0;
  while (handled < 5)
    spin += spin & 1 ? 3 : 1;
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, 0);
  finished();
  return 0;
}
