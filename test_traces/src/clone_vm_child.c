/* A constructor starts a process that shares this one's memory (clone with CLONE_VM and SIGCHLD, no
 * CLONE_THREAD) before main; main reads a global before and after the child writes it
 * (tests/test_shared_mappings.py).  The recorder took the child for a fork's copy: it put the breakpoint at main
 * back "in the child", which removed the program's own, and the memory was not taken as shared. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long shared_word = 1;
volatile long seen[2];
static int go[2], done[2];
static char child_stack[1 << 16];
static pid_t child;

static int in_child(void *unused) {
    char byte;
    (void)unused;
    if (read(go[0], &byte, 1) == 1)
        shared_word = 0x2222;
    return write(done[1], "y", 1) == 1 ? 0 : 1;
}

__attribute__((constructor)) static void start_child(void) {
    if (pipe(go) || pipe(done))
        _exit(2);
    child = clone(in_child, child_stack + sizeof child_stack, CLONE_VM | SIGCHLD, NULL);
}

int main(void) {
    char byte;
    seen[0] = shared_word; /* 1 */
    if (child < 0 || write(go[1], "x", 1) != 1 || read(done[0], &byte, 1) != 1)
        return 2;
    seen[1] = shared_word; /* the child's 0x2222 */
    waitpid(child, NULL, 0);
    return seen[1] == 0x2222 ? 0 : 1;
}
