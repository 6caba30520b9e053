/* Shared memory the end core cannot tell: a shared page a forked child writes, unmapped before the end, and a
 * file mapped read-only whose bytes this thread changes through pwrite (tests/test_shared_mappings.py). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long seen[4];

static long read_word(volatile long *word) { return *word; }

int main(void) {
    volatile long *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return 2;
    page[0] = 1;
    seen[0] = read_word(page); /* 1 */
    pid_t child = fork();
    if (child == 0) {
        page[0] = 0x2222;
        _exit(0);
    }
    waitpid(child, NULL, 0);
    seen[1] = read_word(page); /* the child's 0x2222 */
    munmap((void *)page, 4096);

    int file = memfd_create("shared_unmapped", 0);
    long value = 1;
    if (file < 0 || ftruncate(file, 4096) || pwrite(file, &value, sizeof value, 0) != sizeof value)
        return 2;
    volatile long *view = mmap(NULL, 4096, PROT_READ, MAP_SHARED, file, 0);
    if (view == MAP_FAILED)
        return 2;
    seen[2] = read_word(view); /* 1 */
    value = 0x3333;
    pwrite(file, &value, sizeof value, 0);
    seen[3] = read_word(view); /* 0x3333, through a mapping this process cannot write */
    return 0;
}
