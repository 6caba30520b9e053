/* Three worker threads and a caught signal: each thread has its own stream. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static volatile int signals_seen;
static void on_usr1(int number) { signals_seen += number; }

static void *worker(void *arg) {
  long rounds = (long)arg, sum = 0;
  for (long i = 0; i < 40 * rounds; i++)
    sum += i % 7;
  return (void *)sum;
}

int main(void) {
  signal(SIGUSR1, on_usr1);
  raise(SIGUSR1);
  pthread_t threads[3];
  long total = 0;
  for (long i = 0; i < 3; i++)
    pthread_create(&threads[i], 0, worker, (void *)(i + 1));
  for (int i = 0; i < 3; i++) {
    void *result;
    pthread_join(threads[i], &result);
    total += (long)result;
  }
  printf("total %ld signals %d\n", total, signals_seen);
  return 0;
}
