/* 4 KiB written 8 bytes at a time, a system call that may write them (a read() that fails here), then read 8
 * bytes at a time: each load of the last pass sees through the call to what the first wrote, and teaches the
 * next one the same, 512 deep.  Build: gcc -O0 -g -static. */
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

unsigned char area[4096] __attribute__((aligned(64)));
volatile uint64_t sum;

__attribute__((noinline)) static void fill(void *to, size_t size) {
  for (size_t at = 0; at < size; at += 8)
    *(volatile uint64_t *)((char *)to + at) = 0x1111111111111111ULL;
}

__attribute__((noinline)) static void add(const void *from, size_t size) {
  for (size_t at = 0; at + 8 <= size; at += 8)
    sum += *(const volatile uint64_t *)((const char *)from + at);
}

int main(void) {
  fill(area, sizeof area);
  if (read(-1, area, 4000) >= 0)
    return 1;
  add(area, sizeof area);
  return 0;
}
