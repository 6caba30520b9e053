/* `step` into a function without line information (opaque.c, built without -g) runs it out to the
 * next line; into one with line information (twice) it stops at that function's first line.
 * Build: gcc -c opaque.c && gcc -g steps.c opaque.o */
unsigned opaque_sum(unsigned n);

__attribute__((noinline)) unsigned twice(unsigned x) {
  return 2 * x;
}

int main(void) {
  unsigned total = opaque_sum(3000); /* step: runs opaque_sum out */
  total += twice(total);             /* step: stops in twice */
  return total & 1;
}
