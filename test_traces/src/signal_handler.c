/* A signal handler that runs and returns: main -> deliver -> send calls raise(SIGUSR1), the kernel
 * runs on_signal (which calls note()) on top of send's frames, and its return (through
 * __restore_rt and rt_sigreturn) resumes raise.  History checks: bt inside the handler shows the
 * signal frame and the interrupted frames below it; finish/reverse-finish around the handler; the
 * stack after the handler returns is the one it interrupted.  Build: gcc -O0 -g -static -no-pie. */
#include <signal.h>

static volatile sig_atomic_t seen;

__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

void note(int signal_number) {
  seen = signal_number;
}

void on_signal(int signal_number) {
  note(signal_number);
}

void send(void) {
  raise(SIGUSR1);
  seen += 1;
}

void deliver(void) {
  send();
}

int main(void) {
  signal(SIGUSR1, on_signal);
  deliver();
  the_end();
  return seen == SIGUSR1 + 1 ? 0 : 1;
}
