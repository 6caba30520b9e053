/* A global another thread writes: at the traced thread's past positions its bytes are not known, and LLDB gives
 * no address for a value it cannot read (tests/test_values_lldb.py: watching it). */
#include <pthread.h>
#include <unistd.h>

int shared_global;
static int wake[2];

void marker(void) { __asm__ volatile(""); }
void probe(void) { __asm__ volatile(""); }
void done(void) { __asm__ volatile(""); }

static void *worker(void *unused) {
    char byte;
    if (read(wake[0], &byte, 1) == 1)
        shared_global = 2;
    return unused;
}

int main(void) {
    pthread_t thread;
    if (pipe(wake) || pthread_create(&thread, NULL, worker, NULL))
        return 2;
    marker();
    shared_global = 1;
    probe();
    if (write(wake[1], "g", 1) != 1)
        return 2;
    pthread_join(thread, NULL);
    done();
    return shared_global;
}
