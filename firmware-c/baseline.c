/* The flash figure's reference: the same firmware with the profiler's entry points as
 * empty stubs and no --wrap (built by `cargo xtask firmware-c`, never run). The library's
 * flash cost is the profiled build's flash minus this one's. */
#include "heapsnap.h"

bool heapsnap_init(size_t rate, uint64_t seed, size_t lo, size_t hi) {
    (void)rate, (void)seed, (void)lo, (void)hi;
    return true;
}
bool heapsnap_advance_cycle(void) { return true; }
bool heapsnap_counters(struct HeapsnapCounters *out) {
    *out = (struct HeapsnapCounters){0};
    return true;
}
enum HeapsnapStatus heapsnap_write_snapshot_with(HeapsnapWriteFn write, void *ctx) {
    return write(ctx, (const uint8_t *)"", 0) == 0 ? HEAPSNAP_STATUS_OK
                                                   : HEAPSNAP_STATUS_WRITE_FAILED;
}
