/* The decode loop's hot part in C: libipt's pt_blk_next, block after block, into the decoded storage's rows.
 *
 * Through ctypes every block costs a foreign call and Python work, about 15 times what libipt spends decoding
 * it; here a block costs a hash lookup.  Python keeps everything that happens once in thousands of blocks
 * (errors, synchronizing, truncation, and events other than the frequent ones: the exec-mode event libipt reports
 * at every PSB and the timing updates, which a trace with MTC or CYC packets has every few dozen instructions):
 * lt_decode returns at such an event, an error or the end of the trace, when the output arrays are full, or
 * when the decoder stops reading trace.
 *
 * The file needs neither libipt's header nor its library: Python passes pt_blk_next and pt_blk_get_offset as
 * function pointers from the libipt it loaded, and the block layout below mirrors intel-pt.h (checked against
 * it by tests/test_libipt_layout.py).  Built by setup.py as an optional extension, loaded by compiled_loop.py.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define LT_ABI 4                /* compiled_loop.py refuses a library built from another version of this file */
#define LT_EVENT_PENDING 1      /* pts_event_pending */
#define LT_FAILED (-1000000)  /* the status when the row table cannot grow (no libipt status is this low) */
#define LT_EXEC_MODE 7          /* ptev_exec_mode */
#define LT_TICK 17              /* ptev_tick: a timing update only */
#define LT_CBR 18               /* ptev_cbr: a timing update only */
#define LT_EVENT_IP_SUPPRESSED 1 /* pt_event's ip_suppressed bit */
#define LT_EVENT_HAS_TSC 4       /* pt_event's has_tsc bit */

struct lt_block { /* struct pt_block */
	uint64_t ip;
	uint64_t end_ip;
	int32_t isid;
	int32_t mode;
	int32_t iclass;
	uint16_t ninsn;
	uint8_t raw[15];
	uint8_t size;
	uint8_t flags; /* the speculative and truncated bit-fields */
};

struct lt_event { /* struct pt_event */
	int32_t type;
	uint32_t flags; /* the ip_suppressed, status_update and has_tsc bit-fields */
	uint64_t tsc;
	uint32_t lost_mtc;
	uint32_t lost_cyc;
	uint64_t reserved[2];
	union {
		uint8_t raw[24];
		struct {
			int32_t mode;
			uint64_t ip;
		} exec_mode;
	} variant;
};

typedef int (*lt_next_fn)(void *decoder, struct lt_block *block, size_t size);
typedef int (*lt_event_fn)(void *decoder, struct lt_event *event, size_t size);
typedef int (*lt_offset_fn)(const void *decoder, uint64_t *offset);

/* One call's arguments and results; compiled_loop.py mirrors it field for field. */
struct lt_run {
	/* outputs, each holding up to capacity entries */
	uint64_t capacity;
	uint32_t *sequence;    /* the row of every non-empty block, in trace order */
	uint64_t *row_ips;     /* the rows added: first address, */
	uint16_t *row_sizes;   /* instruction count, */
	uint8_t *row_classes;  /* and class of the last instruction when followed_classes has it, else 0 */
	uint64_t *checkpoints; /* the item index of every ordinal that is a multiple of spacing */
	uint32_t followed_classes; /* bit k: rows keep iclass k */
	uint32_t spacing;          /* ordinals between checkpoints */
	uint32_t batch;            /* pt_blk_next calls between checks that the decoder still reads trace */
	int32_t stalled;           /* out: a whole batch read no trace (a branchless loop: it never ends) */
	/* the part's state, read and updated */
	uint64_t items;      /* items so far */
	uint64_t ordinal;    /* length of the block sequence */
	uint64_t rows;       /* rows in the table (gaps' rows included) */
	uint64_t stalled_at; /* the trace offset after the last whole batch, */
	int32_t has_stalled_at; /* if there was one */
	int32_t has_last_end;   /* out: a block was added; last_end is its last instruction */
	uint64_t last_end;
	/* out: how much of each output was written */
	uint64_t written;
	uint64_t new_rows;
	uint64_t new_checkpoints;
	/* exec-mode events taken here (capacity entries each): item index, ip */
	uint64_t *event_items;
	uint64_t *event_ips;
	uint64_t new_events;  /* out: how many */
	int32_t held;         /* out: an event Python must record was taken; it is in the event buffer */
	int32_t event_failed; /* out: pt_blk_event failed; the status returned is its error */
	/* the events' time stamps, as DecodedPart.add_timestamp keeps them: a new entry where the time changed,
	 * the last entry's value replaced where it changes again before another item */
	uint64_t *tsc_items;
	uint64_t *tsc_values;
	uint64_t new_tsc;          /* out: entries written */
	uint64_t tsc_count;        /* entries so far, the part's included */
	uint64_t tsc_last_item;    /* the last entry, if tsc_count */
	uint64_t tsc_last_value;
	uint64_t tsc_replaced_value; /* out, if tsc_replaced: the part's own last entry's new value */
	int32_t tsc_replaced;
	int32_t padding;
};

/* (ip, size) -> row, open addressing; a size of 0 marks a free slot (empty blocks get no row). */
struct lt_table {
	uint64_t *ips;
	uint16_t *sizes;
	uint32_t *rows;
	uint64_t mask;
	uint64_t used;
};

static uint64_t lt_hash(uint64_t ip, uint16_t size) {
	return ((ip ^ (uint64_t)size << 48) * 0x9E3779B97F4A7C15ull) >> 20;
}

static int lt_alloc(struct lt_table *table, uint64_t slots) {
	table->ips = malloc(slots * sizeof *table->ips);
	table->sizes = calloc(slots, sizeof *table->sizes);
	table->rows = malloc(slots * sizeof *table->rows);
	table->mask = slots - 1;
	table->used = 0;
	if (table->ips && table->sizes && table->rows) return 0;
	free(table->ips), free(table->sizes), free(table->rows);
	table->ips = NULL, table->sizes = NULL, table->rows = NULL;
	return -1;
}

static uint64_t lt_slot(const struct lt_table *table, uint64_t ip, uint16_t size) {
	uint64_t slot = lt_hash(ip, size) & table->mask;
	while (table->sizes[slot] && (table->ips[slot] != ip || table->sizes[slot] != size))
		slot = (slot + 1) & table->mask;
	return slot;
}

static int lt_grow(struct lt_table *table) {
	struct lt_table old = *table;
	if (lt_alloc(table, (old.mask + 1) * 2)) {
		*table = old;
		return -1;
	}
	for (uint64_t k = 0; k <= old.mask; k++) {
		if (!old.sizes[k]) continue;
		uint64_t slot = lt_slot(table, old.ips[k], old.sizes[k]);
		table->ips[slot] = old.ips[k], table->sizes[slot] = old.sizes[k], table->rows[slot] = old.rows[k];
		table->used++;
	}
	free(old.ips), free(old.sizes), free(old.rows);
	return 0;
}

struct lt_table *lt_table_new(void) {
	struct lt_table *table = malloc(sizeof *table);
	if (table && lt_alloc(table, 1024)) {
		free(table);
		return NULL;
	}
	return table;
}

void lt_table_free(struct lt_table *table) {
	if (!table) return;
	free(table->ips), free(table->sizes), free(table->rows);
	free(table);
}

/* Append one non-empty block; -1 when an output is full or the table cannot grow. */
static int lt_add(struct lt_table *table, struct lt_run *run, const struct lt_block *block, uint64_t *next_checkpoint) {
	uint16_t size = block->ninsn;
	uint64_t slot = lt_slot(table, block->ip, size);
	if (run->written >= run->capacity) return -1;
	if (!table->sizes[slot]) {
		uint16_t iclass = (uint16_t)block->iclass; /* the low half, as the Python loop reads it */
		if (run->new_rows >= run->capacity || run->rows > UINT32_MAX) return -1;
		if (2 * (table->used + 1) > table->mask + 1) {
			if (lt_grow(table)) return -1;
			slot = lt_slot(table, block->ip, size);
		}
		table->ips[slot] = block->ip, table->sizes[slot] = size, table->rows[slot] = (uint32_t)run->rows;
		table->used++;
		run->row_ips[run->new_rows] = block->ip;
		run->row_sizes[run->new_rows] = size;
		run->row_classes[run->new_rows] = iclass < 32 && run->followed_classes >> iclass & 1 ? (uint8_t)iclass : 0;
		run->new_rows++, run->rows++;
	}
	if (run->ordinal == *next_checkpoint) {
		if (run->new_checkpoints >= run->capacity) return -1;
		run->checkpoints[run->new_checkpoints++] = run->items;
		*next_checkpoint += run->spacing;
	}
	run->sequence[run->written++] = table->rows[slot];
	run->ordinal++;
	run->items += size;
	run->last_end = block->end_ip;
	run->has_last_end = 1;
	return 0;
}

static void lt_timestamp(struct lt_run *run, uint64_t tsc) {
	if (run->tsc_count && run->tsc_last_value == tsc) return;
	run->tsc_last_value = tsc;
	if (run->tsc_count && run->tsc_last_item == run->items) { /* several before one item: the latest */
		if (run->new_tsc)
			run->tsc_values[run->new_tsc - 1] = tsc;
		else
			run->tsc_replaced = 1, run->tsc_replaced_value = tsc;
		return;
	}
	run->tsc_items[run->new_tsc] = run->tsc_last_item = run->items;
	run->tsc_values[run->new_tsc++] = tsc;
	run->tsc_count++;
}

/* Take pending events while they are timing updates or exec-mode events (with their time stamps), recording
 * each at the current item; stops at any other event (held for Python), an error, or a full output. */
static int lt_take_events(struct lt_run *run, lt_event_fn event_fn, void *decoder, struct lt_event *event,
			  int status) {
	while (status >= 0 && status & LT_EVENT_PENDING && run->new_events < run->capacity &&
	       run->new_tsc < run->capacity) {
		int timing;
		status = event_fn(decoder, event, sizeof *event);
		if (status < 0) {
			run->event_failed = 1;
			return status;
		}
		timing = event->type == LT_TICK || event->type == LT_CBR;
		if (!timing && (event->type != LT_EXEC_MODE || event->flags & LT_EVENT_IP_SUPPRESSED)) {
			run->held = 1;
			return status;
		}
		if (event->flags & LT_EVENT_HAS_TSC) lt_timestamp(run, event->tsc);
		if (timing) continue;
		run->event_items[run->new_events] = run->items;
		run->event_ips[run->new_events] = event->variant.exec_mode.ip;
		run->new_events++;
	}
	return status;
}

/* Whether lt_decode must return to Python now, after taking the pending events it records itself. */
static int lt_stops(struct lt_run *run, lt_event_fn event_fn, void *decoder, struct lt_event *event, int *status) {
	if (*status >= 0 && *status & LT_EVENT_PENDING) *status = lt_take_events(run, event_fn, decoder, event, *status);
	return *status < 0 || *status & LT_EVENT_PENDING || run->held;
}

/* Decode from a decoder whose last call returned status; returns the last status libipt gave (or LT_FAILED).
 * block is where libipt writes each block (Python reads the last one after an error), event each event. */
int lt_decode(struct lt_table *table, lt_next_fn next, lt_offset_fn get_offset, lt_event_fn event_fn,
	      void *decoder, struct lt_block *block, struct lt_event *event, struct lt_run *run, int status) {
	uint64_t next_checkpoint = run->ordinal + (run->spacing - run->ordinal % run->spacing) % run->spacing;
	run->written = run->new_rows = run->new_checkpoints = run->new_events = run->new_tsc = 0;
	run->has_last_end = run->stalled = run->held = run->event_failed = run->tsc_replaced = 0;
	if (!table || !run->spacing || !run->batch) return LT_FAILED;
	while (run->capacity - run->written >= run->batch) {
		uint64_t offset;
		for (uint32_t calls = 0; calls < run->batch; calls++) {
			if (lt_stops(run, event_fn, decoder, event, &status)) return status;
			status = next(decoder, block, sizeof *block);
			if (block->ninsn && lt_add(table, run, block, &next_checkpoint)) return LT_FAILED;
		}
		if (lt_stops(run, event_fn, decoder, event, &status)) return status;
		if (get_offset(decoder, &offset) < 0) continue;
		if (run->has_stalled_at && offset == run->stalled_at) {
			run->stalled = 1;
			return status;
		}
		run->stalled_at = offset;
		run->has_stalled_at = 1;
	}
	return status;
}

/* What compiled_loop.py checks before using the library: the ABI and the layouts it mirrors. */
void lt_layout(uint64_t facts[11]) {
	facts[0] = LT_ABI;
	facts[1] = sizeof(struct lt_block);
	facts[2] = offsetof(struct lt_block, end_ip);
	facts[3] = offsetof(struct lt_block, iclass);
	facts[4] = offsetof(struct lt_block, ninsn);
	facts[5] = offsetof(struct lt_block, flags);
	facts[6] = sizeof(struct lt_run);
	facts[7] = offsetof(struct lt_run, padding);
	facts[8] = sizeof(struct lt_event);
	facts[9] = offsetof(struct lt_event, tsc);
	facts[10] = offsetof(struct lt_event, variant.exec_mode.ip);
}
