/* Functions without debug information, from nodebug_lib.c built without -g: opaque_scale (a leaf) and
 * opaque_apply (which calls back into visible(), built with -g).  History checks: step and reverse-step
 * run through opaque_scale without stopping; reverse-step from inside it says "Single stepping until
 * exit from function opaque_scale, which has no line number information." and stops at the calling
 * line; step into opaque_apply stops in visible (GDB: only with a breakpoint there, see the README).
 * Build: gcc -O0 -c nodebug_lib.c; gcc -O0 -g -static -no-pie nodebug.c nodebug_lib.o. */
int opaque_scale(int value);
int opaque_apply(int (*function)(int), int value);

__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

int visible(int value) {
  return value - 3;
}

int main(void) {
  int scaled = opaque_scale(5);
  int applied = opaque_apply(visible, scaled);
  int again = opaque_scale(applied);
  the_end();
  return again == 696 ? 0 : 1;
}
