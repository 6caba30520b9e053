/* Two signals, each handled and returned from: between them main's frame and the frames below it are not
 * touched.  A recording holds each delivery's frame and system call; what the kernel left alone (the rest of the
 * stack) carries across both.  Build: gcc -O0 -g. */
#include <signal.h>

static volatile sig_atomic_t seen;

static void on_signal(int signal_number) {
  seen += signal_number;
}

__attribute__((noinline)) long between(long *kept) {
  return kept[0] + seen;
}

int main(void) {
  long kept[2] = {7, 0};
  signal(SIGUSR1, on_signal);
  raise(SIGUSR1);
  kept[1] = between(kept);
  raise(SIGUSR1);
  return kept[1] == 7 + SIGUSR1 && seen == 2 * SIGUSR1 ? 0 : 1;
}
