/* A blocking read that signals without a handler (SIGWINCH: ignored by default) interrupt: the kernel runs it
 * again and the program sees only its result.  Under ptrace each signal stops the thread first, with rax
 * -ERESTARTSYS, which the recorder took for the call's result (tests/test_record_output.py).  The child sends
 * each signal once the parent sleeps in the read, so the read is interrupted however fast the recording goes. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int data[2];
char buffer[8];

static char state_of(pid_t pid) { /* /proc/PID/stat's third field: S while it sleeps in the read */
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *file = fopen(path, "r");
    if (!file)
        return '?';
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = 0;
    char *end = strrchr(text, ')');
    return end && end[1] && end[2] ? end[2] : '?';
}

static void wait_until_asleep(pid_t pid) {
    while (state_of(pid) != 'S')
        usleep(1000);
}

int main(void) {
    if (pipe(data))
        return 2;
    pid_t parent = getpid(), child = fork();
    if (child == 0) {
        for (int k = 0; k < 2; k++) {
            wait_until_asleep(parent);
            kill(parent, SIGWINCH);
            usleep(20000);
        }
        wait_until_asleep(parent);
        _exit(write(data[1], "CHILDDAT", 8) == 8 ? 0 : 1);
    }
    long got = read(data[0], buffer, sizeof buffer); /* 8, "CHILDDAT", after two restarts */
    waitpid(child, NULL, 0);
    return got == 8 ? 0 : 1;
}
