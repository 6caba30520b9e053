/* A loop that calls marker three times: a core taken at marker's entry on a later pass stands at the same pc
 * as one taken on the first, with another loop counter and argument.  Build: gcc -O0 -g. */
long total;

__attribute__((noinline)) void marker(long value) {
  total += value;
}

int main(int argc, char **argv) {
  (void)argv;
  long seen = argc + 6;
  for (int i = 0; i < 3; i++)
    marker(i + seen);
  return (int)total;
}
