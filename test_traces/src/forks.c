/* Creates a process each way Linux has, reaps each, prints its pid, and exits with status 3: fork() (the
 * child exits with 1; with the argument "exec" it runs /bin/true instead), vfork() (the child exits with
 * 2), and clone() without CLONE_THREAD nor an exit signal (the child returns 4).  With "early", a
 * constructor forks before main too, and that child runs main's first line (exit status 9). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char child_stack[64 * 1024];
static pid_t early_child = -1; /* 0 in that child */

__attribute__((constructor)) static void fork_early(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "early") == 0)
    early_child = fork();
}

static int cloned(void *code) { return *(int *)code; }

static int reaped(pid_t pid, int expected) {
  int status = 0;
  waitpid(pid, &status, __WALL);
  printf("child %d\n", pid);
  return WIFEXITED(status) && WEXITSTATUS(status) == expected;
}

__attribute__((noinline)) int finished(int all_right) { return all_right ? 3 : 100; }

int main(int argc, char **argv) {
  if (early_child == 0)
    return 9;
  int all_right = early_child < 0 || reaped(early_child, 9), code = 4;
  int execs = argc > 1 && strcmp(argv[1], "exec") == 0;
  pid_t child = fork();
  if (child == 0) {
    if (execs)
      execl("/bin/true", "true", (char *)NULL);
    _exit(1);
  }
  all_right &= reaped(child, execs ? 0 : 1);
  child = vfork();
  if (child == 0)
    _exit(2);
  all_right &= reaped(child, 2);
  child = clone(cloned, child_stack + sizeof child_stack, 0, &code);
  all_right &= reaped(child, 4);
  fflush(stdout);
  return finished(all_right);
}
