/* Writes a global of its own through /proc/self/mem: a pwrite that changes the process's memory, which the
 * table of what system calls write takes for a file's.  Build: gcc -O0 -g -no-pie. */
#include <fcntl.h>
#include <unistd.h>

volatile long target = 0x1111;

int main(void) {
  int fd = open("/proc/self/mem", O_RDWR);
  long value = 0x2222;
  pwrite(fd, &value, sizeof value, (long)&target);
  close(fd);
  return target == 0x2222 ? 0 : 1;
}
