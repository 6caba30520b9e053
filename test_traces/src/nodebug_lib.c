/* Built WITHOUT debug information (see nodebug.c): functions `step` and `reverse-step` have no line
 * to stop at.  opaque_scale is a leaf; opaque_apply calls back into code that has line information. */
int opaque_scale(int value) {
  int result = 0;
  for (int i = 0; i < 12; i++)
    result += value;
  return result;
}

int opaque_apply(int (*function)(int), int value) {
  return function(value) + 1;
}
