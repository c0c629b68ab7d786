//! Poisson sampling over bytes: which allocations get recorded.
//!
//! The heap is treated as a stream of bytes and each byte is sampled with probability
//! `1/rate`, so the gap between two sampled bytes is exponential with mean `rate`
//! (Go's `nextSample`, tcmalloc's `Sampler`). A per-profiler countdown holds the bytes
//! left until the next sample; an allocation that drives it to zero or below is
//! sampled and a fresh gap is drawn. A big object is therefore sampled with probability
//! `1 - exp(-size/rate)`, which the host undoes per bucket.
//!
//! The not-sampled path (`Countdown::take`) is a load, a subtract, a store and a
//! branch: no lock, no read-modify-write atomic, so it also works on thumbv6m (no CAS).
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use core::sync::atomic::{AtomicIsize, Ordering::Relaxed};

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro128PlusPlus;

/// Countdown shards. A host process has many threads on several cores: they pick a
/// shard by their stack address (distinct per thread), so they rarely share a counter
/// and a racy load/store loses almost no decrements. 64 of them (4 KiB), so that one
/// shift and one mask pick the shard: 64 threads with 2 MiB stacks (Rust's default)
/// or 16 with 8 MiB ones (C's) get a shard each. A device has one core and one
/// shard (an interrupt that lands between the load and the store can lose its own
/// decrement: a bias of at most one allocation per interrupt, documented in the README).
#[cfg(feature = "std")]
pub(crate) const SHARDS: usize = 64;
#[cfg(not(feature = "std"))]
pub(crate) const SHARDS: usize = 1;

/// One shard, alone on its cache line on the host so threads don't false-share.
#[cfg_attr(feature = "std", repr(align(64)))]
struct Shard(AtomicIsize);

/// Bytes left until the next sample, per shard.
pub(crate) struct Countdown {
    shards: [Shard; SHARDS],
}

/// Countdown value meaning "never sample" (rate 0).
const OFF: isize = isize::MAX;

impl Countdown {
    /// All shards start one mean interval away (rate 1: the first allocation is sampled).
    pub(crate) const fn new(rate: usize) -> Self {
        let start = initial(rate);
        Countdown {
            shards: [const { Shard(AtomicIsize::new(0)) }; SHARDS],
        }
        .with_all(start)
    }

    /// All shards at zero: the next allocation takes the slow path, which installs the
    /// real interval (or "off") from the profiler's settings.
    pub(crate) const fn zero() -> Self {
        Countdown {
            shards: [const { Shard(AtomicIsize::new(0)) }; SHARDS],
        }
    }

    // Only evaluated in const context (statics), where an out-of-bounds index would be a
    // compile error, never a runtime panic; and `i < SHARDS` anyway.
    #[allow(clippy::indexing_slicing)]
    const fn with_all(self, v: isize) -> Self {
        let mut s = self;
        let mut i = 0;
        while i < SHARDS {
            s.shards[i] = Shard(AtomicIsize::new(v));
            i += 1;
        }
        s
    }

    /// The caller's shard: on the host, by the thread's stack; one shard on bare metal.
    #[inline(always)]
    fn shard(&self) -> Option<&AtomicIsize> {
        #[cfg(feature = "std")]
        let i = {
            // Thread stacks are megabytes apart: the stack address in 2 MiB units,
            // modulo `SHARDS`. The address of a local, not a register read: in a loop
            // that allocates (the allocator inlined into it) the compiler computes it
            // once, where an `asm!` read of the stack pointer is repeated every
            // iteration; in the allocator shim the local shares the stack slot the call
            // into the inner allocator needs for alignment anyway.
            let marker = 0u8;
            let sp = core::ptr::addr_of!(marker) as usize;
            (sp >> 21) % SHARDS
        };
        #[cfg(not(feature = "std"))]
        let i = 0;
        self.shards.get(i).map(|Shard(s)| s)
    }

    /// The fast path: charge `size` bytes to the caller's shard; `Some(shard)` when this
    /// allocation is sampled (the caller then takes the slow path and restarts that
    /// shard with [`Countdown::reset`]: the slow path runs deeper in the stack, where
    /// the stack pointer may already name another shard).
    ///
    /// A load, a subtract, a store and a branch on the subtract's flags: the store is
    /// unconditional (a sampled allocation leaves its shard at or below zero until the
    /// slow path restarts it, so one that cannot, being re-entered, makes the next
    /// allocation the sample), and `left > size` is the comparison the subtract's own
    /// flags answer, where testing the difference against zero cost one instruction
    /// more (x86_64 and Thumb-2 alike). Sampled exactly when the difference is at or
    /// below zero, as before; `size` is at most `isize::MAX` (`Layout` guarantees it).
    #[inline(always)]
    pub(crate) fn take(&self, size: usize) -> Option<&AtomicIsize> {
        let s = self.shard()?;
        let (left, size) = (s.load(Relaxed), size as isize);
        s.store(left.wrapping_sub(size), Relaxed);
        if left > size {
            None
        } else {
            Some(s)
        }
    }

    /// Start the next interval on `shard` (the one [`Countdown::take`] charged).
    #[inline]
    pub(crate) fn reset(shard: &AtomicIsize, next: isize) {
        shard.store(next, Relaxed);
    }

    /// Restart every shard (rate changed).
    pub(crate) fn reset_all(&self, next: isize) {
        for s in &self.shards {
            s.0.store(next, Relaxed);
        }
    }
}

const fn initial(rate: usize) -> isize {
    match rate {
        0 => OFF,
        r if r > (isize::MAX as usize) => OFF,
        r => r as isize,
    }
}

/// Draws exponential intervals: the random half of the sampler.
///
/// Created lazily from the integrator's seed (the PRNG has no `const` constructor and
/// the profiler must be `const`-constructible to live in a `static`).
pub struct IntervalRng {
    seed: u64,
    rng: Option<Xoshiro128PlusPlus>,
}

impl IntervalRng {
    /// A generator that will be seeded with `seed` on first use.
    pub const fn new(seed: u64) -> Self {
        IntervalRng { seed, rng: None }
    }

    /// A uniform value in `(0, 1]` with 24 bits of resolution (an `f32` mantissa).
    #[inline]
    fn uniform(&mut self) -> f32 {
        let seed = self.seed;
        let rng = self
            .rng
            .get_or_insert_with(|| Xoshiro128PlusPlus::seed_from_u64(seed));
        let bits = rng.next_u32() >> 8; // 0 ..= 2^24-1
        (bits as f32 + 1.0) * (1.0 / 16_777_216.0)
    }

    /// Next gap in bytes between samples: exponential with mean `rate`, as the
    /// countdown value to store (rate 0 = off, rate 1 = every allocation).
    ///
    /// `-ln(u)` with `u` uniform in `(0, 1]` is Exp(1); f32 `logf` keeps it cheap on an
    /// FPU-less or single-precision MCU and is far more precise than the sampling noise.
    pub fn next_interval(&mut self, rate: usize) -> isize {
        match rate {
            0 => OFF,
            1 => 0, // every allocation: any size ≥ 1 (and size 0) drives it to ≤ 0
            r => {
                // f32 throughout: single-precision FPUs (Cortex-M4F) do it in hardware,
                // and 24 bits are far finer than the sampling noise.
                let e = -libm::logf(self.uniform()); // 0 ..= 16.64
                let gap = e * r as f32;
                const CAP: isize = 1 << (usize::BITS - 3);
                if gap >= CAP as f32 {
                    CAP
                } else {
                    // +1: a gap of 0 would sample the very next allocation regardless
                    // of its size; Go adds 1 for the same reason.
                    gap as isize + 1
                }
            }
        }
    }
}

pub(crate) const fn countdown_start(rate: usize) -> isize {
    initial(rate)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
mod tests {
    use super::*;

    #[test]
    fn rate_one_samples_every_allocation_and_zero_none() {
        let c = Countdown::new(1);
        let mut rng = IntervalRng::new(7);
        for size in [1usize, 8, 4096] {
            let shard = c.take(size).unwrap();
            Countdown::reset(shard, rng.next_interval(1));
        }
        let off = Countdown::new(0);
        for _ in 0..1000 {
            assert!(off.take(1 << 20).is_none());
        }
    }

    #[test]
    fn countdown_crosses_zero_exactly_at_the_interval() {
        let c = Countdown::new(100);
        assert!(c.take(60).is_none()); // 40 left
        assert!(c.take(39).is_none()); // 1 left
        assert!(c.take(1).is_some()); // reaches 0: sampled
    }

    /// The slow path restarts the shard the fast path charged, wherever its own stack
    /// pointer is (it runs deeper, and on the host a thread's stack can straddle a shard
    /// boundary: then every later allocation was sampled). Here the reset runs on
    /// another thread's stack altogether.
    #[cfg(feature = "std")]
    #[test]
    fn reset_restarts_the_shard_that_was_charged_from_any_stack() {
        let c = Countdown::new(100);
        let shard = c.take(100).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| Countdown::reset(shard, 1000));
        });
        assert!(c.take(10).is_none(), "the charged shard was not restarted");
    }
}
