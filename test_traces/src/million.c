/* Runs well over a million instructions: nested loops with a data-dependent branch. */
int main(void) {
  volatile unsigned acc = 0;
  for (unsigned i = 0; i < 300; i++)
    for (unsigned j = 0; j < 300; j++)
      if ((i ^ j) & 1)
        acc += i * j;
      else
        acc ^= j;
  return acc & 1;
}
