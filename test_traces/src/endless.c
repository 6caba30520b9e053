/* Loops until it is stopped.  With an argument N it sends SIGINT to its parent (the recorder) once,
 * after N rounds: a Ctrl-C that comes at a fixed point of the program's own progress.  A second
 * argument names another signal to send (15: SIGTERM, as `timeout` sends). */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

volatile unsigned long rounds;

int main(int argc, char **argv) {
  unsigned long interrupt_at = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
  int signal_number = argc > 2 ? atoi(argv[2]) : SIGINT;
  for (;;) {
    rounds++;
    if (rounds == interrupt_at)
      kill(getppid(), signal_number);
  }
}
