/* makecontext/swapcontext and back: main switches to a task running on its own stack, the task
 * switches back to main half-way, main resumes it, and the task's return follows uc_link back to
 * main.  History checks: bt inside the task shows the task's own stack (not main's frames), bt in
 * main after each switch shows main alone, reverse-step across a swapcontext lands on the other
 * side.  Build: gcc -O0 -g -static -no-pie. */
#include <ucontext.h>

static ucontext_t main_context, task_context;
static char task_stack[16384];
static int progress;

__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

void work(int amount) {
  progress += amount;
}

void task(void) {
  work(1);
  swapcontext(&task_context, &main_context);
  work(10);
}

int main(void) {
  getcontext(&task_context);
  task_context.uc_stack.ss_sp = task_stack;
  task_context.uc_stack.ss_size = sizeof task_stack;
  task_context.uc_link = &main_context;
  makecontext(&task_context, task, 0);
  swapcontext(&main_context, &task_context);
  work(100);
  swapcontext(&main_context, &task_context);
  the_end();
  return progress == 111 ? 0 : 1;
}
