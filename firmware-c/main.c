/* heapsnap C demo firmware: a subscription router on a Cortex-M3 (QEMU lm3s6965evb)
 * whose every malloc is profiled without a line of profiler code in the workload:
 * the link line wraps newlib's allocator (-Wl,--wrap=malloc,...) with libsampler_c.a.
 *
 * Each turn handles one packet: its payload is parsed in temporary buffers (malloc,
 * calloc, realloc, all freed), and every fourth packet is a SUBSCRIBE whose subscriber
 * record is kept in a list that nothing ever prunes: the leak, allocated in
 * remember_subscriber() (main -> handle_packet -> handle_subscribe ->
 * remember_subscriber). Every DUMP_EVERY packets a snapshot goes to the host over
 * semihosting (snap-000.bin, snap-001.bin, ... in QEMU's working directory). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "board.h"
#include "heapsnap.h"

#define PACKETS 480u
#define DUMP_EVERY 96u
/* Mean sampling interval in bytes: ~50 KB allocated per run give ~800 samples. */
#define SAMPLE_RATE 64u
#define SAMPLER_SEED 0x5eedu

extern char _stack_bottom, _stack_top;

struct subscriber {
    struct subscriber *next;
    char topic[20];
};

static struct subscriber *subscribers;

__attribute__((noinline)) static struct subscriber *remember_subscriber(const char *topic) {
    struct subscriber *s = malloc(sizeof *s); /* the leak: never freed */
    if (s == NULL) return NULL;
    strncpy(s->topic, topic, sizeof s->topic - 1);
    s->topic[sizeof s->topic - 1] = 0;
    s->next = subscribers;
    subscribers = s;
    return s;
}

__attribute__((noinline)) static int handle_subscribe(const char *payload) {
    return remember_subscriber(payload) != NULL ? 0 : -1;
}

/* Temporaries: a parse buffer grown with realloc and a calloc'ed field table. */
__attribute__((noinline)) static int handle_packet(uint32_t seq) {
    size_t len = 32 + 16 * (seq % 4);
    char *payload = malloc(len);
    if (payload == NULL) return -1;
    memset(payload, 'a' + (int)(seq % 26), len - 1);
    payload[len - 1] = 0;
    uint16_t *fields = calloc(8, sizeof *fields);
    if (fields == NULL) return -1;
    for (unsigned i = 0; i < 8; i++) fields[i] = (uint16_t)(payload[i] * (i + 1));
    char *grown = realloc(payload, 2 * len);
    if (grown == NULL) return -1;
    int r = 0;
    if (seq % 4 == 0) r = handle_subscribe(grown + fields[0] % 8);
    free(fields);
    free(grown);
    return r;
}

/* The snapshot writer: 128-byte chunks into a semihosting file. */
struct snap_file {
    int fd;
    size_t used;
    uint8_t buf[128];
};

static int32_t flush(struct snap_file *f) {
    int r = semihosting_write(f->fd, f->buf, f->used);
    f->used = 0;
    return r;
}

static int32_t to_file(void *ctx, const uint8_t *bytes, size_t len) {
    struct snap_file *f = ctx;
    while (len > 0) {
        if (f->used == sizeof f->buf && flush(f) != 0) return 1;
        size_t n = sizeof f->buf - f->used;
        if (n > len) n = len;
        memcpy(f->buf + f->used, bytes, n);
        f->used += n;
        bytes += n;
        len -= n;
    }
    return 0;
}

static int dump(unsigned index) {
    char name[] = "snap-000.bin";
    name[5] = (char)('0' + index / 100 % 10);
    name[6] = (char)('0' + index / 10 % 10);
    name[7] = (char)('0' + index % 10);
    static struct snap_file f;
    f.fd = semihosting_open(name);
    f.used = 0;
    if (f.fd == -1) return -1;
    HeapsnapStatus s = heapsnap_write_snapshot_with(to_file, &f);
    if (s != HEAPSNAP_STATUS_OK || flush(&f) != 0 || semihosting_close(f.fd) != 0) return -1;
    semihosting_write0("firmware-c: wrote ");
    semihosting_write0(name);
    semihosting_write0("\n");
    return 0;
}

int main(void) {
    if (!heapsnap_init(SAMPLE_RATE, SAMPLER_SEED, (size_t)&_stack_bottom, (size_t)&_stack_top)) {
        return 1;
    }
    unsigned dumps = 0;
    for (uint32_t seq = 1; seq <= PACKETS; seq++) {
        if (handle_packet(seq) != 0) {
            semihosting_write0("firmware-c: out of memory\n");
            return 1;
        }
        heapsnap_advance_cycle();
        if (seq % DUMP_EVERY == 0 && dump(dumps++) != 0) {
            semihosting_write0("firmware-c: snapshot failed\n");
            return 1;
        }
    }
    HeapsnapCounters c;
    heapsnap_counters(&c);
    /* Nothing may be dropped in this run: the tables are sized for it. */
    if (c.stack_table_full || c.bucket_table_full || c.live_map_full || c.reentrant ||
        c.truncated_stacks) {
        semihosting_write0("firmware-c: the profiler dropped samples\n");
        return 1;
    }
    semihosting_write0("firmware-c: done\n");
    return 0;
}
