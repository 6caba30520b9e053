/* The floor for any decode of an Intel PT trace with libipt's block decoder: a plain C loop.
 *
 *   blk_decode TRACE FAMILY MODEL STEPPING [FILE OFFSET SIZE VADDR]...
 *
 * Decodes TRACE with the flags lldb_trace uses (blocks end at calls, timing packets as events),
 * with each FILE segment (bytes OFFSET..OFFSET+SIZE) mapped at VADDR; every event is drained, every
 * error resynchronizes at the next PSB.  Prints "instructions blocks events errors seconds".
 * bench_decode_loop.py builds and runs it beside the plugin's decode.
 */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned char *read_file(const char *path, size_t *size) {
	FILE *file = fopen(path, "rb");
	unsigned char *data;
	if (!file || fseek(file, 0, SEEK_END) || (long)(*size = ftell(file)) < 0 || fseek(file, 0, SEEK_SET)) exit(2);
	data = malloc(*size ? *size : 1);
	if (!data || fread(data, 1, *size, file) != *size) exit(2);
	fclose(file);
	return data;
}

int main(int argc, char **argv) {
	struct pt_config config;
	struct pt_block_decoder *decoder;
	struct pt_image *image;
	struct pt_block block;
	struct pt_event event;
	struct timespec start, end;
	unsigned long long instructions = 0, blocks = 0, events = 0, errors = 0;
	size_t size;
	int status;

	if (argc < 5 || (argc - 5) % 4) {
		fprintf(stderr, "usage: %s TRACE FAMILY MODEL STEPPING [FILE OFFSET SIZE VADDR]...\n", argv[0]);
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	pt_config_init(&config);
	config.begin = read_file(argv[1], &size);
	config.end = config.begin + size;
	config.cpu.vendor = pcv_intel;
	config.cpu.family = (uint16_t)atoi(argv[2]);
	config.cpu.model = (uint8_t)atoi(argv[3]);
	config.cpu.stepping = (uint8_t)atoi(argv[4]);
	if (pt_cpu_errata(&config.errata, &config.cpu) < 0) return 3;
	config.flags.variant.block.end_on_call = 1;
	config.flags.variant.block.enable_tick_events = 1;
	decoder = pt_blk_alloc_decoder(&config);
	if (!decoder) return 3;
	image = pt_blk_get_image(decoder);
	for (int k = 5; k < argc; k += 4)
		if (pt_image_add_file(image, argv[k], strtoull(argv[k + 1], NULL, 0), strtoull(argv[k + 2], NULL, 0), NULL,
				      strtoull(argv[k + 3], NULL, 0)) < 0) return 4;
	for (;;) {
		status = pt_blk_sync_forward(decoder);
		if (status == -pte_eos) break;
		while (status >= 0) {
			while (status >= 0 && (status & pts_event_pending)) {
				status = pt_blk_event(decoder, &event, sizeof(event));
				events += status >= 0;
			}
			if (status < 0) break;
			status = pt_blk_next(decoder, &block, sizeof(block));
			instructions += block.ninsn;
			blocks += block.ninsn != 0;
		}
		if (status == -pte_eos) break;
		errors += status < 0;
	}
	pt_blk_free_decoder(decoder);
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("%llu %llu %llu %llu %.6f\n", instructions, blocks, events, errors,
	       (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
	return 0;
}
