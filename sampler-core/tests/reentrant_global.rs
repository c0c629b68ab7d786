//! Re-entrancy through the real global allocator: the stack source itself allocates
//! (as an unwinder or a logging hook might) while the profiler holds its tables. The
//! nested allocation must go to the inner allocator unrecorded, be counted in
//! `Counters::reentrant`, and nothing may deadlock or be lost.
#![cfg(feature = "std")]

use std::alloc::System;
use std::hint::black_box;

use sampler_core::{Captured, ProfiledAlloc, StackSource};

/// Allocates a boxed frame through the global allocator on every capture.
struct AllocatingSource;

impl StackSource for AllocatingSource {
    fn capture(&self, _boundary: usize, out: &mut [usize]) -> Captured {
        let b = black_box(Box::new(0x1234usize));
        out[0] = *b;
        Captured {
            len: 1,
            truncated: false,
        }
    }
}

#[global_allocator]
static HEAP: ProfiledAlloc<System, AllocatingSource, 16, 256, 1024, 4096> =
    ProfiledAlloc::new(System, AllocatingSource, 1, 3);

#[test]
fn a_stack_source_that_allocates_is_counted_not_recursed() {
    let prof = HEAP.profiler();
    let live_40 = || {
        prof.with_tables(|t| {
            t.buckets()
                .filter(|b| b.size == 40)
                .map(|b| {
                    let r = b.record;
                    std::iter::once(r.active)
                        .chain(r.future)
                        .map(|c| i64::from(c.allocs) - i64::from(c.frees))
                        .sum::<i64>()
                })
                .sum::<i64>()
        })
        .unwrap()
    };
    let live_before = live_40();
    let before = prof.counters();
    let kept: Vec<Box<[u8; 40]>> = (0..1000).map(|_| black_box(Box::new([7u8; 40]))).collect();
    let after = prof.counters();
    // Every recorded allocation's capture allocated once, re-entering the profiler.
    let samples = after.samples - before.samples;
    let reentrant = after.reentrant - before.reentrant;
    assert!(samples >= 1000, "{after:?}");
    assert!(
        reentrant >= samples,
        "each sample's capture re-entered: {reentrant} < {samples}"
    );
    assert_eq!(
        (
            after.stack_table_full,
            after.bucket_table_full,
            after.live_map_full
        ),
        (0, 0, 0)
    );
    assert_eq!(
        (live_40() - live_before) as usize,
        kept.len(),
        "every kept object is live in its bucket"
    );
    drop(kept);
}
