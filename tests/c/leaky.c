/* A small C program with known leaks, for the legacy-format corpus (tests/tests/legacy_formats.rs).
 * Run under tcmalloc (LD_PRELOAD=libtcmalloc.so.4, HEAPPROFILE=prefix) it writes a gperftools
 * heap profile through HeapProfilerDump; under jemalloc (LD_PRELOAD=libjemalloc.so.2,
 * MALLOC_CONF=prof:true,...) a prof.dump to argv[1] through mallctl. Both entry points are
 * looked up at run time, so the one program serves both allocators and needs no headers.
 *
 * Kept at the end: leak_small 100 x 48 bytes, leak_large 4 x 1 MiB, leak_medium 10 x 4000
 * bytes (twice as many allocated, half freed); churn allocates and frees 1000 x 256 bytes.
 * With LEAKY_KEEP_ALL=1 in the environment only leak_small and leak_large run: nothing is
 * freed, so the profile's allocated figures are those in use. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept[1024];
static int nkept;

__attribute__((noinline)) static void keep(void *p) {
    memset(p, 1, 1);
    kept[nkept++] = p;
}

__attribute__((noinline)) void leak_small(void) {
    for (int i = 0; i < 100; i++)
        keep(malloc(48));
}

__attribute__((noinline)) void leak_large(void) {
    for (int i = 0; i < 4; i++)
        keep(malloc(1 << 20));
}

__attribute__((noinline)) void leak_medium(void) {
    void *tmp[20];
    for (int i = 0; i < 20; i++)
        tmp[i] = malloc(4000);
    for (int i = 0; i < 20; i++) {
        if (i % 2)
            free(tmp[i]);
        else
            keep(tmp[i]);
    }
}

__attribute__((noinline)) void churn(void) {
    for (int i = 0; i < 1000; i++) {
        char *p = malloc(256);
        p[0] = (char)i;
        free(p);
    }
}

int main(int argc, char **argv) {
    int keep_all = getenv("LEAKY_KEEP_ALL") != NULL;
    leak_small();
    leak_large();
    if (!keep_all) {
        leak_medium();
        churn();
    }
    void (*heap_dump)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "HeapProfilerDump");
    int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
        (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
    if (heap_dump) {
        heap_dump("leaky");
    } else if (mallctl && argc > 1) {
        const char *file = argv[1];
        int e = mallctl("prof.dump", NULL, NULL, (void *)&file, sizeof file);
        if (e != 0) {
            fprintf(stderr, "mallctl prof.dump failed: %d\n", e);
            return 1;
        }
    } else {
        fprintf(stderr, "neither tcmalloc's HeapProfilerDump nor jemalloc's mallctl: run under LD_PRELOAD\n");
        return 1;
    }
    printf("%d objects kept\n", nkept);
    return 0;
}
