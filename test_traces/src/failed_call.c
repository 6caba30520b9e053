/* A system call that fails after writing part of its buffer: uname into a buffer whose end is not mapped
 * copies what fits, then fails with EFAULT (tests/test_syscall_memory.py).  The recorder kept nothing of a
 * failed call, and the bytes before it were shown after it, until the buffer is written again. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

char area[2 * 4096] __attribute__((aligned(4096)));
volatile char first;

static void fill(char *bytes, int count, char value) { /* byte stores whose values the recovery follows */
    for (int k = 0; k < count; k++)
        ((volatile char *)bytes)[k] = value;
}

int main(void) {
    char *edge = area + 4096 - 64;
    if (mprotect(area + 4096, 4096, PROT_NONE))
        return 2;
    fill(edge, 64, (char)0xAA);
    long failed = syscall(SYS_uname, edge); /* -1 (EFAULT), the first 64 bytes written: "Linux" */
    first = edge[0];
    fill(edge, 64, (char)0xCC); /* what the call wrote lives only between */
    return failed == -1 && first == 'L' ? 0 : 1;
}
