/* CPU work in known functions, for the gperftools CPU profile corpus
 * (tests/tests/legacy_formats.rs): linked with -lprofiler and run with CPUPROFILE=FILE,
 * libprofiler samples it (SIGPROF) and writes the binary profile at exit.
 *
 * hot_loop runs about three times as long as warm_loop, both called from work (and
 * hot_loop from main too), so the profile has flat and cumulative time apart; no libc call in
 * the loops, so the samples land in the program's own code. argv[1] (default 400) is
 * the milliseconds of CPU time to burn in all. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long long sink;

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) void hot_loop(long n) {
    unsigned long long x = sink;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    sink = x;
}

__attribute__((noinline)) void warm_loop(long n) {
    unsigned long long x = sink;
    for (long i = 0; i < n; i++)
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sink = x;
}

__attribute__((noinline)) void work(long n) {
    hot_loop(2 * n);
    warm_loop(n);
}

int main(int argc, char **argv) {
    double budget = argc > 1 ? atof(argv[1]) : 400;
    double start = cpu_ms();
    while (cpu_ms() - start < budget) {
        work(1000000);
        hot_loop(1000000);
    }
    return 0;
}
