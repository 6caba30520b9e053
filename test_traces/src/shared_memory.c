/* Memory that changes behind the traced thread's back: one memfd mapped twice (a store through one mapping
 * changes what the other reads), and a shared anonymous page a forked child writes while the parent waits.
 * Neither change is an instruction of the parent's trace.  Build: gcc -O0 -g -static. */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

volatile uint64_t *first_view, *second_view, *page;
volatile uint64_t sink;

__attribute__((noinline)) void the_end(void) { __asm__ volatile(""); }

int main(void) {
  int fd = memfd_create("shared_memory", 0);
  if (fd < 0 || ftruncate(fd, 4096) != 0)
    return 1;
  first_view = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  second_view = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (first_view == MAP_FAILED || second_view == MAP_FAILED || page == MAP_FAILED)
    return 1;
  first_view[0] = 0x4242424242424242ULL; /* second_view[0] holds it too */
  sink = 1;
  second_view[0] = 0x9999999999999999ULL;
  pid_t child = fork();
  if (child == 0) {
    page[0] = 0xc0c0c0c0c0c0c0c0ULL;
    _exit(0);
  }
  waitpid(child, 0, 0);
  sink = page[0];
  the_end();
  return 0;
}
