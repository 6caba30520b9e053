/* The call forest's loops over every block (branches.py) and every branch (regular_runs.py), in C.
 *
 * A slice's columns (forest_branches) are one pass over its blocks instead of a numpy pass per column.  The
 * runs of regular branches (forest_runs_mark, forest_runs_walk) are found in one pass with a stack: the numpy
 * code pairs returns with calls by sorting on depth, marks the returns that land elsewhere than their call's
 * return address irregular and pairs again until none is left; walking the branches in order with the run's
 * open calls on a stack decides each return once, when it is reached: one that closes no call of its run, or
 * lands elsewhere, is irregular and ends the run there, where the numpy passes end up.  regular_runs.py says
 * what a regular branch is and what a run's frames are; its numpy code is the fallback and gives the same.
 *
 * Loaded with ctypes (compiled_runs.py); built as an optional extension, so it exports no Python module.
 */

#include <stdint.h>

#define FOREST_RUNS_ABI 1 /* compiled_runs.py's _ABI: a library built from another version is not used */

enum { CALL = 2, RETURN = 3, JUMP = 4 }; /* libipt's enum pt_insn_class */

/* One slice of a part's block sequence (PartBranches) and the part's rows (PartRows), by ordinal and by row. */
struct forest_columns {
    const void *sequence; /* per ordinal: its row, uint16 or uint32 */
    int64_t sequence_wide;
    int64_t count; /* ordinals in the slice's columns */
    const uint8_t *classes, *gaps; /* per ordinal */
    const int64_t *ends; /* per ordinal: its last item */
    const uint8_t *tail, *stub; /* per row: holds a tail jump; is a PLT stub */
    const uint64_t *returns, *ips; /* per row: a call's return address; the block's address */
    const void *ordinals; /* the ordinals to visit (branches), int32 or int64 */
    int64_t ordinals_wide;
};

/* What the walk finds, per regular call (numbered from 0 in trace order): arrays of the chunk's length. */
struct forest_calls {
    int64_t *calls; /* its branch number in the chunk */
    void *first, *last; /* its frame's items (int32, or int64 where items_wide); last -1 while left open */
    int64_t items_wide;
    int32_t *levels; /* depth below the run's first frame */
    int32_t *parents; /* the call it is made from, -1 for one made from the run's first frame */
    uint64_t *entries; /* the called function's address */
    int64_t *bounds; /* (start, stop) of every run of regular branches, flattened */
    int64_t bound_count;
};

/* What compiled_runs.py checks before using the library: the version and the structs' sizes. */
void forest_runs_layout(int64_t facts[3])
{
    facts[0] = FOREST_RUNS_ABI;
    facts[1] = sizeof(struct forest_columns);
    facts[2] = sizeof(struct forest_calls);
}

static inline int64_t row_of(const struct forest_columns *c, int64_t ordinal)
{
    return c->sequence_wide ? ((const uint32_t *)c->sequence)[ordinal] : ((const uint16_t *)c->sequence)[ordinal];
}

static inline int64_t ordinal_of(const struct forest_columns *c, int64_t branch)
{
    return c->ordinals_wide ? ((const int64_t *)c->ordinals)[branch] : ((const int32_t *)c->ordinals)[branch];
}

static inline int64_t next_of(const struct forest_columns *c, int64_t ordinal)
{
    return ordinal + 1 < c->count ? ordinal + 1 : c->count - 1;
}

static inline void put_item(void *column, int64_t wide, int64_t at, int64_t item)
{
    if (wide)
        ((int64_t *)column)[at] = item;
    else
        ((int32_t *)column)[at] = (int32_t)item;
}

/* The columns of ordinals 0..count of a part's block sequence (PartBranches), from its rows: sizes (a gap, row
 * size 0, counts as one item), gaps, ends (each one's last item, from base) and classes; and the ordinals to visit
 * among the first slice of them (a branch, a gap, a block holding a tail jump).  Return how many those are. */
int64_t forest_branches(const void *sequence, int64_t sequence_wide, int64_t count, int64_t slice,
                        const uint16_t *restrict block_sizes, const uint8_t *restrict row_classes,
                        const uint8_t *restrict tail, int64_t base, uint16_t *restrict sizes, uint8_t *restrict gaps,
                        int64_t *restrict ends, uint8_t *restrict classes, void *ordinals, int64_t ordinals_wide)
{
    int64_t end = base - 1, found = 0;
    for (int64_t ordinal = 0; ordinal < count; ordinal++) {
        int64_t row = sequence_wide ? ((const uint32_t *)sequence)[ordinal] : ((const uint16_t *)sequence)[ordinal];
        uint16_t size = block_sizes[row];
        uint8_t cls = row_classes[row];
        gaps[ordinal] = size == 0;
        sizes[ordinal] = size ? size : 1;
        end += size ? size : 1;
        ends[ordinal] = end;
        classes[ordinal] = cls;
        if (ordinal < slice && (cls || !size || tail[row]))
            put_item(ordinals, ordinals_wide, found++, ordinal);
    }
    return found;
}

/* Mark branches low..high irregular for what their own block and the next say (flags in irregular, from 0 at
 * low); write the jumps still regular to jumps (numbered from low), for the caller to judge; return how many. */
int64_t forest_runs_mark(const struct forest_columns *columns, int64_t low, int64_t high, uint8_t *restrict irregular,
                         int64_t *restrict jumps)
{
    const struct forest_columns c = *columns; /* a local copy: stores through bytes could alias *columns */
    int64_t found = 0;
    for (int64_t k = 0; k < high - low; k++) {
        int64_t ordinal = ordinal_of(&c, low + k), next = next_of(&c, ordinal);
        int cls = c.classes[ordinal];
        int odd = (cls != CALL && cls != RETURN && cls != JUMP) | c.gaps[ordinal] | c.gaps[next];
        odd |= (ordinal + 1 == c.count) | c.tail[row_of(&c, ordinal)] | (cls == CALL && c.stub[row_of(&c, next)]);
        odd |= irregular[k];
        irregular[k] = (uint8_t)odd;
        if (cls == JUMP && !odd)
            jumps[found++] = k;
    }
    return found;
}

/* Walk branches low..high with the run's open calls on a stack (a call's parent is the one below it): open a
 * frame per regular call, close it at the return that lands at its return address; any other return is made
 * irregular.  Fill out (irregular gains those returns); return the number of regular calls. */
int64_t forest_runs_walk(const struct forest_columns *columns, int64_t low, int64_t high,
                         uint8_t *restrict irregular, struct forest_calls *found)
{
    const struct forest_columns c = *columns;
    struct forest_calls out = *found;
    int64_t made = 0, top = -1, bounds = 0, start = -1;
    for (int64_t k = 0; k < high - low; k++) {
        int64_t ordinal = ordinal_of(&c, low + k);
        int cls = c.classes[ordinal], odd = irregular[k];
        if (!odd && cls == RETURN) {
            uint64_t lands = c.ips[row_of(&c, next_of(&c, ordinal))];
            if (top >= 0 && lands == c.returns[row_of(&c, ordinal_of(&c, low + out.calls[top]))]) {
                put_item(out.last, out.items_wide, top, c.ends[ordinal]);
                top = out.parents[top];
            } else {
                odd = irregular[k] = 1;
            }
        } else if (!odd && cls == CALL) {
            out.calls[made] = k;
            put_item(out.first, out.items_wide, made, c.ends[ordinal] + 1);
            put_item(out.last, out.items_wide, made, -1);
            out.levels[made] = top >= 0 ? out.levels[top] + 1 : 0;
            out.parents[made] = (int32_t)top;
            out.entries[made] = c.ips[row_of(&c, next_of(&c, ordinal))];
            top = made++;
        }
        if (odd) {
            top = -1;
            if (start >= 0) {
                out.bounds[bounds++] = start;
                out.bounds[bounds++] = k;
                start = -1;
            }
        } else if (start < 0) {
            start = k;
        }
    }
    if (start >= 0) {
        out.bounds[bounds++] = start;
        out.bounds[bounds++] = high - low;
    }
    found->bound_count = bounds / 2;
    return made;
}
