// A C++ exception thrown five frames deep (main -> f1 -> ... -> f5, which throws) and caught in main,
// which then makes more calls.  History checks: after the catch, bt shows main alone (f1..f5 are
// dead), later calls sit one level below main, and reverse-step back from the handler works.
// Build: g++ -O0 -g -static -no-pie.
struct Problem {
  int code;
};

// The first exception of a static program makes the unwinder sort every FDE of the binary (millions
// of instructions).  One thrown and caught before main does that before the recording starts there.
static int warm_up() {
  try {
    throw Problem{0};
  } catch (const Problem &) {
  }
  return 0;
}
static int warmed_up = warm_up();

extern "C" __attribute__((noinline)) void the_end() {
  __asm__ volatile("");
}

void f5(int depth) {
  throw Problem{depth};
}

void f4(int depth) {
  f5(depth + 1);
}

void f3(int depth) {
  f4(depth + 1);
}

void f2(int depth) {
  f3(depth + 1);
}

void f1(int depth) {
  f2(depth + 1);
}

int after(int value) {
  return value * 2;
}

int main() {
  int code = 0;
  try {
    f1(1);
  } catch (const Problem &problem) {
    code = problem.code;
  }
  int doubled = after(code);
  the_end();
  return doubled == 10 && warmed_up == 0 ? 0 : 1;
}
