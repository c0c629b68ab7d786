/* The C API from a host C program, built and run by tests/c_api.rs.
 *
 * Fills the stack table, frees unknown pointers, writes snapshots every way the API
 * offers, and prints the figures the Rust test checks (it also decodes the snapshot
 * files this program writes). Exits non-zero, naming the check, on any mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapsnap.h"

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "api_test.c:%d: check failed: %s\n", __LINE__, #cond); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

/* More distinct stacks than the table holds. */
#define ALLOCS (HEAPSNAP_STACKS + 36)
/* Addresses that were never allocated. */
#define UNKNOWN 4096

struct mem_sink {
    unsigned char *buf;
    size_t len, cap;
    int fail_after; /* fail the call after this many, or -1 */
};

static int32_t to_memory(void *ctx, const uint8_t *bytes, size_t len) {
    struct mem_sink *s = ctx;
    if (s->fail_after == 0) return 1;
    if (s->fail_after > 0) s->fail_after--;
    if (s->len + len > s->cap) return 1;
    memcpy(s->buf + s->len, bytes, len);
    s->len += len;
    return 0;
}

static void write_file(const char *path, const unsigned char *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(bytes, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

int main(int argc, char **argv) {
    CHECK(argc == 4); /* snapshot files: after the allocations, after all frees, framed */
    HeapsnapCounters c;
    CHECK(!heapsnap_counters(NULL));

    /* rate 1: every allocation is sampled. No stack range: the host has no walker. */
    CHECK(heapsnap_init(1, 42, 0, 0));

    /* ALLOCS objects of 16 bytes, each with its own two-frame stack. */
    static char objects[ALLOCS][16];
    for (size_t i = 0; i < ALLOCS; i++) {
        size_t frames[2] = {0x1000 + 4 * i, 0x2000};
        heapsnap_record_alloc_stack(objects[i], sizeof objects[i], frames, 2);
    }
    heapsnap_record_alloc_stack(NULL, 16, NULL, 0); /* ignored */
    CHECK(heapsnap_counters(&c));
    printf("after allocs: samples=%llu stack_table_full=%llu live_map_full=%llu\n",
           (unsigned long long)c.samples, (unsigned long long)c.stack_table_full,
           (unsigned long long)c.live_map_full);
    CHECK(c.samples == ALLOCS);
    CHECK(c.stack_table_full == ALLOCS - HEAPSNAP_STACKS);
    CHECK(c.heap_totals == 0);

    /* Frees of addresses never allocated: counted when they look sampled, else free. */
    for (size_t k = 0; k < UNKNOWN; k++) heapsnap_record_free((void *)(0x10000000u + 8 * k));
    heapsnap_record_free(NULL); /* ignored */
    CHECK(heapsnap_counters(&c));
    printf("after unknown frees: unknown_frees=%llu\n", (unsigned long long)c.unknown_frees);
    CHECK(c.unknown_frees > 0 && c.unknown_frees <= UNKNOWN);
    uint64_t unknown = c.unknown_frees;

    CHECK(heapsnap_advance_cycle());

    /* Buffer too small: the needed size comes back, then fits exactly. */
    size_t need = 0;
    CHECK(heapsnap_write_snapshot(NULL, 16, &need) == HEAPSNAP_STATUS_NULL_ARGUMENT);
    CHECK(heapsnap_write_snapshot(NULL, 0, NULL) == HEAPSNAP_STATUS_NULL_ARGUMENT);
    unsigned char small[8];
    CHECK(heapsnap_write_snapshot(small, sizeof small, &need) ==
          HEAPSNAP_STATUS_BUFFER_TOO_SMALL);
    CHECK(need > sizeof small && need <= heapsnap_max_snapshot_len());
    size_t max = heapsnap_max_snapshot_len();
    unsigned char *buf = malloc(max);
    size_t len = 0;
    CHECK(heapsnap_write_snapshot(buf, need, &len) == HEAPSNAP_STATUS_OK);
    CHECK(len == need);
    printf("snapshot: %zu bytes (max %zu)\n", len, heapsnap_max_snapshot_len());

    /* The callback gets the same bytes; a failing callback is reported. */
    unsigned char *streamed = malloc(len);
    struct mem_sink s = {streamed, 0, len, -1};
    CHECK(heapsnap_write_snapshot_with(to_memory, &s) == HEAPSNAP_STATUS_OK);
    CHECK(s.len == len && memcmp(streamed, buf, len) == 0);
    struct mem_sink failing = {streamed, 0, len, 3};
    CHECK(heapsnap_write_snapshot_with(to_memory, &failing) ==
          HEAPSNAP_STATUS_WRITE_FAILED);
    CHECK(heapsnap_write_snapshot_with(NULL, NULL) == HEAPSNAP_STATUS_NULL_ARGUMENT);
    write_file(argv[1], buf, len);

    /* Framed: ends in the COBS delimiter. */
    size_t framed_len = 0;
    unsigned char *framed = malloc(2 * max);
    CHECK(heapsnap_write_snapshot_framed(framed, 2 * max, &framed_len) == HEAPSNAP_STATUS_OK);
    CHECK(framed_len > len && framed[framed_len - 1] == 0);
    for (size_t i = 0; i + 1 < framed_len; i++) CHECK(framed[i] != 0);
    struct mem_sink fs = {streamed, 0, len, -1};
    unsigned char *framed2 = malloc(2 * max);
    fs.buf = framed2, fs.cap = 2 * max;
    CHECK(heapsnap_write_snapshot_framed_with(to_memory, &fs) == HEAPSNAP_STATUS_OK);
    CHECK(fs.len == framed_len && memcmp(framed2, framed, framed_len) == 0);
    write_file(argv[3], framed, framed_len);

    /* realloc: object 0 moves to a new address (still one live object), a failed
     * realloc (NULL) records nothing; then everything is freed. */
    static char moved[32];
    heapsnap_record_realloc(objects[0], moved, sizeof moved);
    heapsnap_record_realloc(objects[1], NULL, 64);
    /* realloc(p, 0) returning NULL freed p (newlib, glibc): object 2 is not freed again. */
    heapsnap_record_realloc(objects[2], NULL, 0);
    for (size_t i = 1; i < ALLOCS; i++)
        if (i != 2) heapsnap_record_free(objects[i]);
    heapsnap_record_free(moved);
    CHECK(heapsnap_advance_cycle());
    CHECK(heapsnap_counters(&c));
    printf("after frees: samples=%llu unknown_frees=%llu\n", (unsigned long long)c.samples,
           (unsigned long long)c.unknown_frees);
    CHECK(c.samples == ALLOCS + 1); /* the realloc's new object */
    /* Objects whose samples were dropped (stack table full) are not tracked: their
     * frees may look sampled and count as unknown, never as freed objects. */
    CHECK(c.unknown_frees >= unknown);
    CHECK(heapsnap_write_snapshot(buf, max, &len) == HEAPSNAP_STATUS_OK);
    write_file(argv[2], buf, len);
    printf("ok\n");
    return 0;
}
