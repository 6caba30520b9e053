/* Static, non-PIE and freestanding (no libc): raw syscalls only.
 * Built with -nostdlib -static -no-pie; _start is the entry point. */
static long sys3(long number, long a, long b, long c) {
  long result;
  __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return result;
}

static unsigned collatz_steps(unsigned n) {
  unsigned steps = 0;
  while (n != 1) {
    n = n % 2 ? 3 * n + 1 : n / 2;
    steps++;
  }
  return steps;
}

/* REP string instructions: ptrace stops once per iteration, PT reports each once. */
static void fill_and_copy(char *destination, char *source, unsigned long count) {
  __asm__ volatile("rep stosb" : "+D"(source), "+c"(count) : "a"('z') : "memory");
  count = 16;
  source -= 16;
  __asm__ volatile("rep movsb" : "+D"(destination), "+S"(source), "+c"(count) : : "memory");
}

int main(void) {
  unsigned total = 0;
  char from[16], to[16];
  fill_and_copy(to, from, sizeof from);
  total += (unsigned)to[3];
  for (unsigned i = 1; i < 12; i++)
    total += collatz_steps(i);
  char line[] = "static done\n";
  sys3(1, 1, (long)line, sizeof line - 1); /* write */
  return (int)(total & 0x7f);
}

void _start(void) {
  sys3(60, main(), 0, 0); /* exit */
  __builtin_unreachable();
}
