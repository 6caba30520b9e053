/* Source lines that are more than one line-table row: a statement spread over several lines, a line
 * with three statements, a `for` loop whose condition line is revisited on every iteration, and a
 * function whose last line is its closing brace.  GDB 13 mishandles some of these in reverse (GDB 14
 * fixed it: gdb.reverse/map-to-same-line.exp).  Build: gcc -O0 -g -static -no-pie. */
__attribute__((noinline)) void the_end(void) {
  __asm__ volatile("");
}

static int weigh(int value,
                 int factor) {
  int result = value * factor;
  result += value;
  return result;
}

int total(const int *values, int count) {
  int sum = 0;
  for (int i = 0; i < count; i++)
    sum += weigh(values[i],
                 i + 1);
  return sum;
}

int main(void) {
  int values[3] = {3, 1, 4};
  int a = 1, b = 2, c;
  c = a; a = b; b = c;
  int sum = total(values,
                  3);
  int distance = sum > 20
                     ? sum - 20
                     : 20 - sum;
  the_end();
  return distance + a + b == 8 ? 0 : 1;
}
