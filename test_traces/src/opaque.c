/* Built without debug information (see steps.c): code `step` has no line to stop at. */
unsigned opaque_sum(unsigned n) {
  unsigned sum = 0;
  for (unsigned i = 0; i < n; i++)
    sum += i % 7 ? i : 3 * i;
  return sum;
}
