/* A busy loop interrupted by SIGALRM again and again.  A watcher thread sends each signal once the loop
 * has made some progress, so the signal lands at whatever instruction the loop is at (asynchronously),
 * but how many signals arrive and how much of the loop runs between them depend only on the loop's own
 * progress, never on time or machine speed.  The handler counts its own runs, so a recording can be
 * checked for having seen every one of them. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#define SIGNALS 5
#define ITERATIONS_PER_SIGNAL 40

volatile int handled;
static volatile unsigned progress;
static volatile int armed;
static pthread_t looper;

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

__attribute__((noinline)) void on_alarm(int signo) {
  if (signo == SIGALRM)
    handled++;
}

static void *watch(void *unused) {
  (void)unused;
  while (!armed)
    sched_yield();
  for (int sent = 0; sent < SIGNALS; sent++) {
    unsigned due = progress + ITERATIONS_PER_SIGNAL;
    while (progress < due)
      sched_yield();
    pthread_kill(looper, SIGALRM);
    while (handled <= sent)
      sched_yield();
  }
  return 0;
}

int main(void) {
  looper = pthread_self();
  pthread_t watcher;
  pthread_create(&watcher, 0, watch, 0);
  struct sigaction action = {0};
  action.sa_handler = on_alarm;
  sigaction(SIGALRM, &action, 0);
  armed = 1;
  volatile unsigned spin = 0;
  while (handled < SIGNALS) {
    spin += spin & 1 ? 3 : 1;
    progress++;
  }
  pthread_join(watcher, 0);
  finished();
  return 0;
}
