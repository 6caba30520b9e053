/* The call forest's bulk build against its one-branch-at-a-time reference (tests/test_forest_bulk.py):
 * long regular stretches (a recursive tree of calls, calls through a pointer, a switch's jump
 * table) cut, every round, by everything the forest must follow exactly: a retpoline, calls through
 * the PLT (bound lazily the first time), tail calls (direct and through the PLT), a longjmp out of
 * nested calls, a signal handler (delivered on a syscall's return, left through
 * __restore_rt), a swapcontext to another stack and back, clock_gettime (in the vdso) and a call
 * into a library with no unwind tables (forest_mix_lib.c).
 * Build: gcc -O0 -g -Wl,-z,lazy forest_mix.c -lforest_mix_lib (dynamic: the PLT and ld.so's resolver
 * are part of the run). */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#ifndef ROUNDS
#define ROUNDS 12
#endif

unsigned unwound_nowhere(unsigned x); /* forest_mix_lib.c */

static jmp_buf escape;
static ucontext_t main_context, task_context;
static char task_stack[16384];
static volatile unsigned sink;

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

__attribute__((noinline)) unsigned leaf(unsigned x) { return x * 2654435761u; }

__attribute__((noinline)) unsigned tree(unsigned depth, unsigned x) {
  if (!depth)
    return leaf(x);
  return tree(depth - 1, x + 1) ^ tree(depth - 1, x * 3);
}

__attribute__((noinline)) unsigned pick(unsigned k, unsigned x) {
  switch (k % 7) { /* dense enough for a jump table: an indirect jump inside the function */
  case 0: return x + 1;
  case 1: return x * 5;
  case 2: return x ^ 0x55;
  case 3: return x - 7;
  case 4: return x << 2;
  case 5: return x >> 1;
  default: return x;
  }
}

/* A retpoline (GCC's indirect-branch thunk): the thunk calls into itself, overwrites that call's return
 * address with the pointer's target and returns there, a return landing elsewhere than where it was called. */
__attribute__((noinline, indirect_branch("thunk"))) unsigned through_thunk(unsigned (*fn)(unsigned, unsigned),
                                                                            unsigned k, unsigned x) {
  return fn(k, x);
}

__attribute__((noinline, optimize("O2"))) unsigned tail_to_leaf(unsigned x) { return leaf(x + 3); }

__attribute__((noinline, optimize("O2"))) size_t tail_to_strlen(const char *text) { return strlen(text); }

__attribute__((noinline)) void fall(unsigned depth) {
  if (!depth)
    longjmp(escape, 1);
  fall(depth - 1);
  sink++;
}

static void on_signal(int number) { sink += tree(3, (unsigned)number); }

static void task(void) {
  for (;;) {
    sink += tree(2, sink);
    swapcontext(&task_context, &main_context);
  }
}

int main(void) {
  unsigned (*through_pointer)(unsigned, unsigned) = pick;
  signal(SIGUSR1, on_signal);
  getcontext(&task_context);
  task_context.uc_stack.ss_sp = task_stack;
  task_context.uc_stack.ss_size = sizeof task_stack;
  makecontext(&task_context, task, 0);
  for (unsigned round = 0; round < ROUNDS; round++) {
    sink += tree(6, round);
    for (unsigned k = 0; k < 20; k++)
      sink += through_pointer(k, sink) + through_thunk(pick, k, sink);
    sink += strlen("forest") + tail_to_strlen("bulk") + tail_to_leaf(round) + unwound_nowhere(round);
    if (!setjmp(escape))
      fall(3);
    raise(SIGUSR1);
    swapcontext(&main_context, &task_context);
    sink += tree(4, sink);
    struct timespec now; /* in the vdso: the live recorder leaves it untraced */
    clock_gettime(CLOCK_MONOTONIC, &now);
    sink += (unsigned)now.tv_nsec & 1;
  }
  finished();
  return 0;
}
