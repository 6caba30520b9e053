/* An inventory: parses records (strtok, atoi, strtod), keeps them in a hash table of linked
 * entries (calloc, snprintf, strcmp), sorts a report (qsort through a callback), prints a
 * double, and crashes on a missing item: a null entry dereferenced, as real crashes are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RECORDS
#define RECORDS 60
#endif

struct item { char name[24]; int count; double price; struct item *next; };
#define BUCKETS 64
static struct item *table[BUCKETS];

static unsigned hash(const char *s) { unsigned h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; return h % BUCKETS; }

static struct item *find(const char *name) {
  for (struct item *it = table[hash(name)]; it; it = it->next)
    if (strcmp(it->name, name) == 0) return it;
  return NULL;
}

static void add(const char *name, int count, double price) {
  struct item *it = find(name);
  if (!it) {
    it = calloc(1, sizeof *it);
    snprintf(it->name, sizeof it->name, "%s", name);
    unsigned h = hash(name);
    it->next = table[h];
    table[h] = it;
  }
  it->count += count;
  it->price = price;
}

static int by_value(const void *a, const void *b) {
  const struct item *x = *(struct item *const *)a, *y = *(struct item *const *)b;
  double d = x->count * x->price - y->count * y->price;
  return (d > 0) - (d < 0);
}

int main(void) {
  char line[64];
  for (int i = 0; i < RECORDS; i++) {
    snprintf(line, sizeof line, "part-%d %d %d.%02d", i % 97, i % 13, i % 50, i % 100);
    char *name = strtok(line, " ");
    int count = atoi(strtok(NULL, " "));
    double price = strtod(strtok(NULL, " "), NULL);
    add(name, count, price);
  }
  struct item *all[BUCKETS * 4];
  int n = 0;
  for (int b = 0; b < BUCKETS; b++)
    for (struct item *it = table[b]; it; it = it->next) all[n++] = it;
  qsort(all, n, sizeof *all, by_value);
  double total = 0;
  for (int i = 0; i < n; i++) total += all[i]->count * all[i]->price;
  printf("%d items worth %.2f\n", n, total);
  struct item *wanted = find("part-100");
  return wanted->count;
}
