/* A shared page a forked child writes after this process stored to it, never read again before the process
 * exits.  A trace saved with no state at its end (pt start, then the process exited) had nothing to say the page
 * changed, and showed the parent's store at checkpoint (tests/test_shared_mappings.py). */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long *page;

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile(""); }

int main(void) {
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return 2;
    page[0] = 111;
    pid_t child = fork();
    if (child == 0) {
        page[0] = 222;
        _exit(0);
    }
    waitpid(child, NULL, 0);
    checkpoint(); /* the page holds 222 */
    return 0;
}
