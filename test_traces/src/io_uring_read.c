/* An io_uring read the kernel completes behind the thread's back: it writes buf while returning from an unrelated
 * write() (task work), so no system call of the trace says it wrote there.  Exits 2 where io_uring is not
 * allowed (a container's seccomp, kernel.io_uring_disabled).  Build: gcc -O2 -g -static. */
#include <linux/io_uring.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

char buf[32];
volatile char seen[4];

int main(void) {
  int pipes[2];
  if (pipe(pipes) != 0)
    return 1;
  memset(buf, 'z', sizeof buf);
  struct io_uring_params params;
  memset(&params, 0, sizeof params);
  int ring = syscall(__NR_io_uring_setup, 4, &params);
  if (ring < 0)
    return 2;
  size_t sq_size = params.sq_off.array + params.sq_entries * 4;
  size_t cq_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
  char *sq = mmap(0, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
  char *cq = mmap(0, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
  struct io_uring_sqe *sqes = mmap(0, params.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
    return 1;
  memset(&sqes[0], 0, sizeof sqes[0]);
  sqes[0].opcode = IORING_OP_READ;
  sqes[0].fd = pipes[0];
  sqes[0].addr = (uintptr_t)buf;
  sqes[0].len = 8;
  sqes[0].off = -1;
  ((unsigned *)(sq + params.sq_off.array))[0] = 0;
  __atomic_store_n((unsigned *)(sq + params.sq_off.tail), 1, __ATOMIC_RELEASE);
  syscall(__NR_io_uring_enter, ring, 1, 0, 0, 0, 0);
  seen[0] = buf[0]; /* 'z': the pipe is empty */
  if (write(pipes[1], "ABCDEFGH", 8) != 8)
    return 1;
  seen[1] = buf[0];
  while (__atomic_load_n((unsigned *)(cq + params.cq_off.tail), __ATOMIC_ACQUIRE) == 0)
    ;
  seen[2] = buf[0];
  seen[3] = buf[7];
  *(volatile int *)0 = seen[0] + seen[1]; /* crash: the core */
  return 0;
}
