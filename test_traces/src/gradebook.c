/* The README's bug hunt: a tiny gradebook that crashes.  Each student keeps up to MAX_MARKS marks and
 * a pointer to their course.  add_mark() checks the count with `>` where it needs `>=`, so the fifth
 * mark is written one past the end of marks[] and lands on the course pointer beside it.  Nothing
 * fails there: the program crashes three calls later, in credits_earned(), when it follows that
 * pointer.  Build: gcc -O0 -g -static -no-pie. */
#define MAX_MARKS 4

struct course {
  const char *title;
  int credits;
};

struct student {
  const char *name;
  int marks[MAX_MARKS];
  struct course *course;
  int count;
};

static int add_mark(struct student *student, int mark) {
  if (student->count > MAX_MARKS) /* the bug: a full array passes this check */
    return 0;
  student->marks[student->count] = mark;
  student->count++;
  return 1;
}

static int average(const struct student *student) {
  int sum = 0;
  for (int i = 0; i < student->count && i < MAX_MARKS; i++)
    sum += student->marks[i];
  return sum / MAX_MARKS;
}

static int credits_earned(const struct student *student) {
  int mark = average(student);
  if (mark < 5)
    return 0;
  return student->course->credits;
}

static int report(const struct student *student) {
  return credits_earned(student);
}

int main(void) {
  static struct course algebra = {"algebra", 6};
  struct student ada = {"Ada", {0}, &algebra, 0};
  static const int arrived[] = {7, 9, 8, 10, 6};
  for (int i = 0; i < 5; i++)
    add_mark(&ada, arrived[i]);
  return report(&ada) == 6 ? 0 : 1;
}
