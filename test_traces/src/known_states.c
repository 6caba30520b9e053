/* Reads a file, asks fstat and clock_gettime (a clock the vDSO does not serve: a real syscall) and keeps
 * the results in a global: the recorder's syscall results and cores have known values to show.
 * With a second argument it writes through a null pointer at the end (a crash, SIGSEGV at address 0);
 * with "stop" it stops itself (SIGSTOP), for a core to be taken while it waits. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char contents[64];
long total;

int main(int argc, char **argv) {
  struct stat info;
  struct timespec now;
  int fd = open(argc > 1 ? argv[1] : "/etc/hostname", O_RDONLY);
  ssize_t got = read(fd, contents, sizeof contents);
  fstat(fd, &info);
  close(fd);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  total = got + info.st_size;
  if (argc > 2 && strcmp(argv[2], "stop") == 0)
    raise(SIGSTOP);
  else if (argc > 2)
    *(volatile long *)(long)(argc - 3) = total;
  return (int)(total & 1);
}
