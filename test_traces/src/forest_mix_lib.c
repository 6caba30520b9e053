/* forest_mix.c's shared library, built WITHOUT unwind tables (-fno-asynchronous-unwind-tables
 * -fno-unwind-tables): no function range covers its code, so the PLT stub's jump into it is the
 * only sign that the call reached it. */
unsigned unwound_nowhere(unsigned x) {
  return x * 3 + 1;
}
