//! RAM per table entry, as the README's formula states it. The 32-bit figures (40 B per
//! bucket, 12 B per stack, 4 B per frame, 16 B per live object) are `const` assertions
//! in `src/tables.rs` that the thumbv6m/thumbv7em/riscv32 builds of `cargo xtask test`
//! evaluate, and `cargo xtask device` checks the formula against the link test's ELF;
//! here the same layout is checked at the host's pointer width.

use std::mem::size_of;

use sampler_core::tables::{BucketSlot, MemRecord, StackSlot};
use sampler_core::Profiler;

const W: usize = size_of::<usize>();

#[test]
fn per_entry_sizes_follow_the_formula_at_this_pointer_width() {
    assert_eq!(
        size_of::<MemRecord>(),
        32,
        "active + 3 future cycles of two u32 counts"
    );
    // size (one word) + record + stack id + used flag, rounded to the word.
    assert_eq!(size_of::<BucketSlot>(), (W + 32 + 3).next_multiple_of(W));
    assert_eq!(size_of::<StackSlot>(), 12);
    if W == 4 {
        assert_eq!(size_of::<BucketSlot>(), 40);
    }
}

#[test]
fn a_profiler_is_its_tables_plus_a_small_constant() {
    // Live entry on this width: heapless entry (u16 hash, usize key, u16 value) + u32
    // index + 4 filter bytes.
    let live = (2 + W + 2).next_multiple_of(W) + 4 + 4;
    let bucket = size_of::<BucketSlot>();
    let formula = |s: usize, f: usize, b: usize, l: usize| bucket * b + 12 * s + W * f + live * l;
    let small = size_of::<Profiler<64, 1024, 128, 128, 16>>();
    let big = size_of::<Profiler<1024, 16384, 2048, 4096, 32>>();
    let (fs, fb) = (
        formula(64, 1024, 128, 128),
        formula(1024, 16384, 2048, 4096),
    );
    // The constant part (countdown shards — 64 cache lines on std hosts, 4 KiB —,
    // counters, PRNG, locks) is the same for both sizes.
    assert!(
        small >= fs && small - fs <= 4096 + 512,
        "{small} vs formula {fs}"
    );
    assert_eq!(
        big - fb,
        small - fs,
        "per-entry costs are exactly the formula's"
    );
}
