//! `lock-stats`: the slow paths' critical sections are counted and their waits timed
//! (what `bench-peers --features lock-stats` reports for the 4-thread pipe).
#![cfg(feature = "lock-stats")]

use std::sync::mpsc;
use std::time::Duration;

use sampler_core::lock_stats::{stats, Path};
use sampler_core::{NoStack, Profiler, Recorded};

#[test]
fn sampled_allocations_and_frees_count_their_sections_and_waits() {
    let prof = Profiler::<16, 256, 16, 16>::new(1, 1);
    let before = stats();
    assert_eq!(
        prof.record_alloc(0x100 as *const u8, 32, &NoStack),
        Recorded::Sampled
    );
    prof.record_free(0x100 as *const u8, 32);
    let after = stats();
    let (s, f) = (Path::Sampled as usize, Path::Free as usize);
    assert!(after[s].entries > before[s].entries, "{after:?}");
    assert!(after[f].entries > before[f].entries, "{after:?}");

    // Another thread holds the process-wide lock for 200 ms: the sampled allocation
    // made meanwhile waits for it, and the wait is what is reported.
    let (held, go) = mpsc::channel();
    let before = stats();
    std::thread::scope(|sc| {
        sc.spawn(move || {
            critical_section::with(|_| {
                held.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(200));
            })
        });
        go.recv().unwrap();
        assert_eq!(
            prof.record_alloc(0x200 as *const u8, 32, &NoStack),
            Recorded::Sampled
        );
    });
    let after = stats();
    let waited = after[s].wait_ns - before[s].wait_ns;
    assert!(
        waited >= 100_000_000,
        "the sampled allocation waited {waited} ns for a lock held 200 ms"
    );
    assert!(after[s].max_wait_ns >= waited.min(100_000_000));
}
