//! Stress: 8 threads × 200k allocations and frees through `ProfiledAlloc<System>` as
//! the global allocator of this test binary, every allocation sampled (rate 1), stacks
//! from the unwinder. No deadlock, nothing dropped, and the books balance exactly:
//! sampled allocations − credited frees == objects in the live map.
#![cfg(all(feature = "std", unix))]

use std::alloc::System;
use std::hint::black_box;

use sampler_core::{HostStack, ProfiledAlloc};

#[global_allocator]
static HEAP: ProfiledAlloc<System, HostStack, 4096, { 1 << 17 }, 16384, { 1 << 16 }> =
    ProfiledAlloc::new(System, HostStack, 1, 0x5EED);

const THREADS: usize = 8;
const OPS: usize = 200_000;
const KEPT: usize = 100;

#[inline(never)]
fn churn(t: usize) -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity(KEPT);
    for i in 0..OPS {
        let size = 1 + (i * 7 + t * 13) % 300;
        let v = black_box(vec![t as u8; size]);
        if i >= OPS - KEPT {
            kept.push(v);
        }
    }
    kept
}

#[test]
fn eight_threads_at_rate_one_balance_exactly() {
    let prof = HEAP.profiler();
    let before = prof.counters().samples;
    let kept: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS).map(|t| s.spawn(move || churn(t))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(kept.iter().map(Vec::len).sum::<usize>(), THREADS * KEPT);
    let c = prof.counters();
    assert!(
        c.samples - before >= (THREADS * OPS) as u64,
        "samples {} (before {before})",
        c.samples
    );
    assert_eq!(
        (
            c.stack_table_full,
            c.bucket_table_full,
            c.live_map_full,
            c.unknown_frees
        ),
        (0, 0, 0, 0),
        "{c:?}"
    );
    // One locked look: every sampled allocation minus every credited free, over every
    // bucket and every open cycle, equals the live map's size.
    let (outstanding, live) = prof
        .with_tables(|t| {
            let mut n: i64 = 0;
            for b in t.buckets() {
                let r = b.record;
                for c in std::iter::once(r.active).chain(r.future) {
                    n += i64::from(c.allocs) - i64::from(c.frees);
                }
            }
            (n, t.live_objects() as i64)
        })
        .unwrap();
    assert_eq!(outstanding, live);
    assert!(
        live >= (THREADS * KEPT) as i64,
        "the kept objects are live: {live}"
    );
    drop(kept);
    let live_after = prof.live_objects() as i64;
    assert!(
        live_after <= live - (THREADS * KEPT) as i64,
        "{live_after} vs {live}"
    );
}
