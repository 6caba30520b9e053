/* A thread lldb-trace record does not follow (--threads main, its default) writes a global between the main
 * thread's stores and loads, and is joined before the end: no core holds it.  Build: gcc -O0 -g -pthread. */
#include <pthread.h>

volatile long shared;
volatile int turn;

static void *worker(void *unused) {
  (void)unused;
  while (turn != 1)
    ;
  shared = 222; /* in no trace */
  turn = 2;
  while (turn != 3)
    ;
  shared = 444;
  turn = 4;
  return 0;
}

int main(void) {
  pthread_t thread;
  pthread_create(&thread, 0, worker, 0);
  shared = 111;
  turn = 1;
  while (turn != 2)
    ;
  long seen = shared; /* 222, not the 111 this thread stored */
  shared = 333;
  turn = 3;
  while (turn != 4)
    ;
  seen += shared; /* 444 */
  pthread_join(thread, 0);
  return seen == 666 ? 0 : 1;
}
