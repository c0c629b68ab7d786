//! Exact heap totals (`TOTALS = true`): every allocation, free and realloc through
//! `ProfiledAlloc` over the system allocator, and every `record_alloc`/`record_free` of
//! a pool, counted exactly whatever the sampling rate; absent (not zero) when off.
#![cfg(feature = "std")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sampler_core::snapshot::decode;
use sampler_core::{HeapTotals, NoStack, ProfiledAlloc, Profiler};

type Exact = ProfiledAlloc<System, NoStack, 64, 1024, 64, 256, 32, true>;

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).unwrap()
}

/// A known workload: 40 allocations of 1..=40 × 24 bytes, the even ones freed, a third
/// of the rest grown and another third shrunk by realloc. Returns the totals it must
/// give, counted here independently.
fn workload<A: GlobalAlloc>(a: &A) -> HeapTotals {
    let mut live: Vec<(*mut u8, usize)> = Vec::new();
    let (mut allocs, mut frees, mut in_use, mut peak) = (0u64, 0u64, 0u64, 0u64);
    for i in 1..=40usize {
        let size = i * 24;
        let p = unsafe {
            if i % 5 == 0 {
                a.alloc_zeroed(layout(size))
            } else {
                a.alloc(layout(size))
            }
        };
        assert!(!p.is_null());
        allocs += 1;
        in_use += size as u64;
        peak = peak.max(in_use);
        live.push((p, size));
    }
    let mut kept = Vec::new();
    for (n, (p, size)) in live.into_iter().enumerate() {
        if n % 2 == 0 {
            unsafe { a.dealloc(p, layout(size)) };
            frees += 1;
            in_use -= size as u64;
        } else {
            kept.push((p, size));
        }
    }
    for (n, (p, size)) in kept.iter_mut().enumerate() {
        let new = match n % 3 {
            0 => *size * 3,
            1 => *size / 2,
            _ => continue,
        };
        let q = unsafe { a.realloc(*p, layout(*size), new) };
        assert!(!q.is_null());
        // A realloc: one free of the old size, one allocation of the new.
        frees += 1;
        allocs += 1;
        in_use = in_use - *size as u64 + new as u64;
        peak = peak.max(in_use);
        *p = q;
        *size = new;
    }
    // Half of what is left stays allocated (the "in use" at the end); free the rest.
    for (p, size) in kept.drain(..).skip(10) {
        unsafe { a.dealloc(p, layout(size)) };
        frees += 1;
        in_use -= size as u64;
    }
    HeapTotals {
        allocs,
        frees,
        in_use_bytes: in_use,
        peak_bytes: peak,
    }
}

#[test]
fn every_call_is_counted_at_any_rate() {
    // Rate 0 (sampling off), rate 1 (every allocation sampled) and a rate in between:
    // the totals do not depend on sampling.
    for rate in [0usize, 1, 4096] {
        let a: Exact = ProfiledAlloc::new(System, NoStack, rate, 3);
        let want = workload(&a);
        assert_eq!(want.allocs, 40 + 14, "the workload as designed");
        assert_eq!(a.profiler().heap(), Some(want), "rate {rate}");
        assert_eq!(a.profiler().heap().unwrap().in_use_objects(), 10);
        // The snapshot carries them, the decoder gives them back.
        let snap = decode(&a.profiler().snapshot_vec(&[], false).unwrap()).unwrap();
        assert_eq!(snap.counters.heap(), Some(want), "rate {rate}");
        assert_eq!(snap.counters.samples > 0, rate != 0);
    }
}

#[test]
fn without_totals_nothing_is_counted_and_snapshots_say_so() {
    let a: ProfiledAlloc<System, NoStack, 64, 1024, 64, 256> =
        ProfiledAlloc::new(System, NoStack, 1, 3);
    workload(&a);
    assert_eq!(a.profiler().heap(), None);
    let snap = decode(&a.profiler().snapshot_vec(&[], false).unwrap()).unwrap();
    assert_eq!(
        snap.counters.heap(),
        None,
        "absent, not a heap of zero bytes"
    );
    assert_eq!(snap.counters.heap_totals, 0);
}

/// An allocator whose next call fails on demand.
struct Failing {
    fail: Cell<bool>,
}

// SAFETY: forwards to System unless told to fail (a null return, as GlobalAlloc allows).
unsafe impl GlobalAlloc for Failing {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if self.fail.replace(false) {
            std::ptr::null_mut()
        } else {
            unsafe { System.alloc(l) }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if self.fail.replace(false) {
            std::ptr::null_mut()
        } else {
            unsafe { System.realloc(p, l, new) }
        }
    }
}

#[test]
fn failed_calls_change_nothing() {
    let a: ProfiledAlloc<Failing, NoStack, 64, 1024, 64, 256, 32, true> = ProfiledAlloc::new(
        Failing {
            fail: Cell::new(false),
        },
        NoStack,
        1,
        3,
    );
    let p = unsafe { a.alloc(layout(100)) };
    a.inner().fail.set(true);
    assert!(unsafe { a.alloc(layout(5000)) }.is_null());
    a.inner().fail.set(true);
    // A failed realloc leaves the old block allocated: still 100 bytes, 1 object.
    assert!(unsafe { a.realloc(p, layout(100), 9000) }.is_null());
    let h = a.profiler().heap().unwrap();
    assert_eq!(
        h,
        HeapTotals {
            allocs: 1,
            frees: 0,
            in_use_bytes: 100,
            peak_bytes: 100
        }
    );
    let q = unsafe { a.realloc(p, layout(100), 300) };
    assert!(!q.is_null());
    unsafe { a.dealloc(q, layout(300)) };
    assert_eq!(
        a.profiler().heap().unwrap(),
        HeapTotals {
            allocs: 2,
            frees: 2,
            in_use_bytes: 0,
            peak_bytes: 300
        }
    );
}

#[test]
fn pools_are_counted_like_the_global_allocator() {
    static POOL: Profiler<16, 256, 16, 16, 8, true> = Profiler::off();
    assert_eq!(
        POOL.heap(),
        Some(HeapTotals::default()),
        "counting from the start"
    );
    // Sampling off (never started), then on: every call counted either way.
    for i in 0..10usize {
        POOL.record_alloc((0x1000 + i * 64) as *const u8, 48, &NoStack);
    }
    POOL.start(1, 9);
    for i in 0..10usize {
        POOL.record_alloc((0x2000 + i * 64) as *const u8, 16, &NoStack);
    }
    for i in 0..10usize {
        POOL.record_free((0x1000 + i * 64) as *const u8, 48);
    }
    POOL.record_free(0x2000 as *const u8, 16);
    let h = POOL.heap().unwrap();
    assert_eq!(
        h,
        HeapTotals {
            allocs: 20,
            frees: 11,
            in_use_bytes: 9 * 16,
            peak_bytes: 10 * 48 + 10 * 16
        }
    );
    assert_eq!(POOL.counters().heap(), Some(h));
}

#[test]
fn threads_racing_are_counted_exactly() {
    static SHARED: ProfiledAlloc<System, NoStack, 64, 1024, 64, 256, 32, true> =
        ProfiledAlloc::new(System, NoStack, 512, 5);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..20_000usize {
                    let size = 8 + (i + t) % 64;
                    let p = unsafe { SHARED.alloc(layout(size)) };
                    unsafe { SHARED.dealloc(p, layout(size)) };
                }
                // Each thread keeps one block of 1000 + t bytes.
                unsafe { SHARED.alloc(layout(1000 + t)) };
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let h = SHARED.profiler().heap().unwrap();
    assert_eq!((h.allocs, h.frees), (4 * 20_001, 4 * 20_000));
    assert_eq!(h.in_use_bytes, 4 * 1000 + 6);
    assert_eq!(h.in_use_objects(), 4);
    assert!(
        h.peak_bytes >= h.in_use_bytes && h.peak_bytes <= 4 * (1003 + 71),
        "{h:?}"
    );
}
