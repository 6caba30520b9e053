/* Strings that LLDB shows by summary: a char array in a heap struct and a char pointer to a heap buffer.
 * From the end core alone their bytes are not known before fill() writes them, and at the crash ``wild``'s
 * are not mapped (tests/test_unknown_strings.py).
 * Build: gcc -O0 -g -no-pie string_fields.c -o string_fields */
#include <stdlib.h>
#include <string.h>

struct record {
  long id;
  char tag[8];
  char *note;
};

__attribute__((noinline)) static void fill(struct record *r, const char *text) {
  r->id = 7;
  r->note = malloc(32);
  strcpy(r->note, text); /* the note's buffer is known from here on */
  memcpy(r->tag, "node1", 6);
}

struct pair {
  struct record first, second;
};

int main(void) {
  struct record *r = malloc(sizeof *r);
  struct record *wild = (struct record *)0x480000000040; /* mapped nowhere: at the crash, not mapped */
  struct pair *both = malloc(sizeof *both);
  fill(r, "hello, world");
  r->note[31] = (char)(long)wild;
  for (int k = 0; k < 8; k++)
    both->first.tag[k] = 0; /* empty and known; second.tag shows empty to LLDB too, not known until fill() */
  fill(&both->second, "second");
  return *(volatile int *)(r->id - 7); /* a null dereference: the recording ends in a crash and its core */
}
