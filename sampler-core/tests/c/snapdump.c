/* An independent snapshot reader written from docs/snapshot-format.md alone (the C
 * functions are the spec's), so the spec is checked to be implementable: the test
 * `snapshot_spec_c.rs` compiles this and compares its dump with the Rust decoder's.
 *
 * Reads versions 1 to 4: the object table (§2.5), the timestamp and flags (§2.6), and
 * version 4's stacks that name the frames they share with an earlier stack (§2.3).
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
    /* Version 2: the object table (§2.5); versions 3 and 4: flags after the cycle, for
     * a timestamp and/or the object table (§2.6); version 4: shared frames (§2.3). */
    if (version < 1 || version > 4) fail("unsupported version");
    unsigned word_size = *take(1);
    printf("version %u\nword_size %u\n", version, word_size);
    printf("sample_rate %" PRIu64 "\n", varint());
    printf("cycle %" PRIu64 "\n", varint());
    int has_objects = version == 2;
    if (version >= 3) {
        uint64_t flags = varint();
        if (flags & ~(uint64_t)3) fail("unsupported flags");
        has_objects = (flags & 2) != 0;
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
    /* A stack takes at least 2 bytes: the count is bounded by the input. */
    if (nstacks > (len - pos) / 2) fail("truncated");
    /* Version 4: every stack's frames, for the stacks that share them (§2.3). */
    uint64_t **frames = calloc(nstacks ? nstacks : 1, sizeof *frames);
    uint64_t *nframes = calloc(nstacks ? nstacks : 1, sizeof *nframes);
    uint64_t expanded = 0;
    if (!frames || !nframes) fail("out of memory");
    /* A link out of range (§2.3) is a problem of meaning, reported after the CRC like
     * the Rust decoder's; the stack is read as its own frames. */
    const char *bad_link = NULL;
    for (uint64_t i = 0; i < nstacks; i++) {
        uint64_t id = varint(), head = varint(), own = head, base = 0, shared = 0, frame = 0;
        if (version >= 4) {
            own = head >> 1;
            if (own > len - pos) fail("truncated");
            if (head & 1) {
                base = varint();
                shared = varint();
                if (base < 1 || base > i) {
                    if (!bad_link) bad_link = "stack shares frames of a stack not before it";
                    shared = 0;
                } else if (shared < 1 || shared > nframes[i - base]) {
                    if (!bad_link) bad_link = "stack shares too many frames";
                    shared = 0;
                }
            }
        }
        if (own > len - pos) fail("truncated");
        frames[i] = malloc((own + shared ? own + shared : 1) * sizeof **frames);
        if (!frames[i]) fail("out of memory");
        for (uint64_t k = 0; k < own; k++) {
            frame = k == 0 ? varint() : frame + (uint64_t)unzigzag(varint());
            frames[i][k] = frame;
        }
        /* The cap of §2.3: 4 frames per byte read, checked at once (§5.3). */
        expanded += own + shared;
        if (version >= 4 && expanded > 4 * (uint64_t)pos) fail("stacks expand past the cap");
        const uint64_t *outer = shared ? frames[i - base] + nframes[i - base] - shared : NULL;
        for (uint64_t k = 0; k < shared; k++) frames[i][own + k] = outer[k];
        nframes[i] = own + shared;
        printf("stack %" PRIu64 ":", id);
        for (uint64_t k = 0; k < nframes[i]; k++) printf(" %" PRIx64, frames[i][k]);
        printf("\n");
    }

    uint64_t nbuckets = varint();
    /* A bucket takes at least 6 bytes: the count is bounded by the input. */
    if (nbuckets > (len - pos) / 6) fail("truncated");
    uint64_t *keys = malloc(2 * (nbuckets ? nbuckets : 1) * sizeof *keys);
    if (!keys) fail("out of memory");
    for (uint64_t i = 0; i < nbuckets; i++) {
        uint64_t stack = varint(), size = varint();
        uint64_t allocs = varint(), frees = varint(), ab = varint(), fb = varint();
        keys[2 * i] = stack;
        keys[2 * i + 1] = size;
        printf("bucket %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", stack,
               size, allocs, frees, ab, fb);
    }

    /* The object table (§2.5). Its meaning (bucket, word size) is checked
     * after the CRC, like the Rust decoder's. */
    uint64_t nobjects = 0, *objs = NULL;
    if (has_objects) {
        nobjects = varint();
        /* An object takes at least 3 bytes. */
        if (nobjects > (len - pos) / 3) fail("truncated");
        objs = malloc(3 * (nobjects ? nobjects : 1) * sizeof *objs);
        if (!objs) fail("out of memory");
        uint64_t addr = 0;
        for (uint64_t i = 0; i < nobjects; i++) {
            addr = i == 0 ? varint() : addr + (uint64_t)unzigzag(varint());
            uint64_t stack = varint();
            if (stack > 0xFFFFFFFFu) fail("stack id does not fit u32");
            uint64_t size = varint();
            objs[3 * i] = addr;
            objs[3 * i + 1] = stack;
            objs[3 * i + 2] = size;
            printf("object %" PRIx64 " %" PRIu64 " %" PRIu64 "\n", addr, stack, size);
        }
    }

    size_t body = pos;
    const uint8_t *c = take(4);
    uint32_t stored = c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
    uint32_t computed = crc32_update(0xFFFFFFFFu, buf, body) ^ 0xFFFFFFFFu;
    if (stored != computed) fail("bad crc");
    if (pos != len) fail("trailing bytes");
    if (bad_link) fail(bad_link);
    uint64_t word_max = word_size >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * word_size)) - 1;
    for (uint64_t i = 0; i < nobjects; i++) {
        if (objs[3 * i] > word_max) fail("object address does not fit the word size");
        int found = 0;
        for (uint64_t k = 0; k < nbuckets && !found; k++)
            found = keys[2 * k] == objs[3 * i + 1] && keys[2 * k + 1] == objs[3 * i + 2];
        if (!found) fail("object names no bucket");
    }
    printf("crc %08x\n", stored);
    return 0;
}
