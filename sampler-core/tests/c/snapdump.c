/* An independent snapshot reader written from docs/snapshot-format.md alone (the C
 * functions are the spec's), so the spec is checked to be implementable: the test
 * `snapshot_spec_c.rs` compiles this and compares its dump with the Rust decoder's.
 *
 * usage: snapdump FILE   -> prints a canonical text dump, exit 0; or "error: ..." exit 1
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int get_varint(const uint8_t *p, size_t len, uint64_t *out) {
    uint64_t v = 0;
    for (size_t i = 0; i < 10; i++) {
        if (i == len) return 0;
        uint8_t b = p[i];
        if (i == 9 && b > 1) return -1;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) { *out = v; return (int)i + 1; }
    }
    return -1;
}

static int64_t unzigzag(uint64_t z) { return (int64_t)(z >> 1) ^ -(int64_t)(z & 1); }

static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n) {
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1));
    }
    return crc;
}

static const uint8_t *buf;
static size_t len, pos;

static void fail(const char *what) {
    printf("error: %s at byte %zu\n", what, pos);
    exit(1);
}

static uint64_t varint(void) {
    uint64_t v;
    int n = get_varint(buf + pos, len - pos, &v);
    if (n == 0) fail("truncated");
    if (n < 0) fail("bad varint");
    pos += (size_t)n;
    return v;
}

static const uint8_t *take(size_t n) {
    if (len - pos < n) fail("truncated");
    const uint8_t *p = buf + pos;
    pos += n;
    return p;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: snapdump FILE\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    static uint8_t data[1 << 24];
    len = fread(data, 1, sizeof data, f);
    fclose(f);
    buf = data;

    if (memcmp(take(4), "HSNP", 4) != 0) fail("bad magic");
    const uint8_t *v = take(2);
    unsigned version = v[0] | (unsigned)v[1] << 8;
    /* Version 3 with a timestamp only (spec §2.6); no object table (version 2). */
    if (version != 1 && version != 3) fail("unsupported version");
    unsigned word_size = *take(1);
    printf("version %u\nword_size %u\n", version, word_size);
    printf("sample_rate %" PRIu64 "\n", varint());
    printf("cycle %" PRIu64 "\n", varint());
    if (version == 3) {
        uint64_t flags = varint();
        if (flags & ~(uint64_t)1) fail("unsupported flags");
        if (flags & 1) {
            uint64_t ticks = varint();
            printf("timestamp %" PRIu64 " %" PRIu64 "\n", ticks, varint());
        }
    }

    uint64_t ncounters = varint();
    printf("counters");
    for (uint64_t i = 0; i < ncounters; i++) {
        uint64_t c = varint();
        if (i < 7) printf(" %" PRIu64, c);
    }
    printf("\n");

    uint64_t nmappings = varint();
    for (uint64_t i = 0; i < nmappings; i++) {
        uint64_t start = varint(), end = varint(), offset = varint();
        uint64_t name_len = varint();
        const uint8_t *name = take(name_len);
        printf("mapping %" PRIx64 " %" PRIx64 " %" PRIx64 " %.*s ", start, end, offset, (int)name_len,
               (const char *)name);
        uint64_t id_len = varint();
        const uint8_t *id = take(id_len);
        for (uint64_t k = 0; k < id_len; k++) printf("%02x", id[k]);
        printf("\n");
    }

    uint64_t nstacks = varint();
    for (uint64_t i = 0; i < nstacks; i++) {
        uint64_t id = varint(), nframes = varint(), frame = 0;
        printf("stack %" PRIu64 ":", id);
        for (uint64_t k = 0; k < nframes; k++) {
            frame = k == 0 ? varint() : frame + (uint64_t)unzigzag(varint());
            printf(" %" PRIx64, frame);
        }
        printf("\n");
    }

    uint64_t nbuckets = varint();
    for (uint64_t i = 0; i < nbuckets; i++) {
        uint64_t stack = varint(), size = varint();
        uint64_t allocs = varint(), frees = varint(), ab = varint(), fb = varint();
        printf("bucket %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", stack,
               size, allocs, frees, ab, fb);
    }

    size_t body = pos;
    const uint8_t *c = take(4);
    uint32_t stored = c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
    uint32_t computed = crc32_update(0xFFFFFFFFu, buf, body) ^ 0xFFFFFFFFu;
    if (stored != computed) fail("bad crc");
    if (pos != len) fail("trailing bytes");
    printf("crc %08x\n", stored);
    return 0;
}
