//! The not-sampled fast path in instructions: `N` 16-byte alloc+free pairs through one
//! allocator, the loop the criterion bench `alloc_free_16B` times, in a function of its
//! own so callgrind counts it alone.
//!
//! ```sh
//! cargo build --release -p sampler-core --features std --example fast_path
//! valgrind --tool=callgrind --toggle-collect='fast_path::run_*' \
//!     target/release/examples/fast_path profiled 1000000
//! ```
//!
//! Instructions per pair = the collected total / `N`; the profiler's cost is
//! `profiled` minus `system` (the loop's own instructions cancel).
//!
//! The bench's shape (`system`, `profiled`, `totals`) calls the allocator directly, so
//! the compiler hoists what does not change between iterations (the countdown shard,
//! the hash constant) out of the loop. A program's allocations go through the
//! `__rust_alloc` / `__rust_dealloc` shims instead, where nothing is hoisted:
//! `system_shim` and `profiled_shim` call each allocator through out-of-line functions
//! of that shape, and their difference is the profiler's cost in a program.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

// The bench's loop and allocators, with its capacities and rate.
#[path = "../benches/common/fast_path.rs"]
mod fast_path_loop;
use fast_path_loop::{churn, L16, PROFILED, PROFILED_TOTALS};

#[inline(never)]
fn run_system(n: u64) {
    for _ in 0..n {
        churn(&System);
    }
}

#[inline(never)]
fn run_profiled(n: u64) {
    for _ in 0..n {
        churn(&PROFILED);
    }
}

#[inline(never)]
fn run_totals(n: u64) {
    for _ in 0..n {
        churn(&PROFILED_TOTALS);
    }
}

/// The allocator behind a call, as the `__rust_alloc` shim puts it (with the allocator
/// inlined into the shim).
#[inline(never)]
fn shim_alloc<A: GlobalAlloc>(a: &A, layout: Layout) -> *mut u8 {
    // SAFETY: a valid, non-zero-sized layout.
    unsafe { a.alloc(layout) }
}

#[inline(never)]
fn shim_dealloc<A: GlobalAlloc>(a: &A, p: *mut u8, layout: Layout) {
    // SAFETY: `p` came from `shim_alloc(a, layout)`.
    unsafe { a.dealloc(p, layout) }
}

#[inline(always)]
fn run_shim<A: GlobalAlloc>(a: &A, n: u64) {
    for _ in 0..n {
        let p = shim_alloc(a, L16);
        black_box(p);
        shim_dealloc(a, p, L16);
    }
}

#[inline(never)]
fn run_system_shim(n: u64) {
    run_shim(&System, n);
}

#[inline(never)]
fn run_profiled_shim(n: u64) {
    run_shim(&PROFILED, n);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "profiled".into());
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    match which.as_str() {
        "system" => run_system(n),
        "profiled" => run_profiled(n),
        "totals" => run_totals(n),
        "system_shim" => run_system_shim(n),
        "profiled_shim" => run_profiled_shim(n),
        other => {
            eprintln!("fast_path: system | profiled | totals | system_shim | profiled_shim, not {other:?}");
            std::process::exit(2);
        }
    }
}
