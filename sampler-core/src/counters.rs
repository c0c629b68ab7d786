//! The drop/overflow counters and the exact heap totals, listed once.
//!
//! The [`counters!`] table below is the one list of counters: it generates the
//! [`Counters`] struct, its wire order, names and descriptions, which the encoder, the
//! decoder and `heapsnap inspect` iterate. Adding a counter is an entry at the end of
//! `appended`, plus what the checks ask for: a row in `docs/snapshot-format.md` §2.1
//! (`tests/counters_spec.rs`) and a warning in host-cli's `inspect::warnings` (a struct
//! pattern that names every field, so it does not compile until then).
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

/// Name and meaning of one counter, as listed in [`Counters::LIST`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    /// Field name, also the name in the spec, `inspect` and profile comments.
    pub name: &'static str,
    /// The field's doc comment: what it counts.
    pub meaning: &'static str,
}

/// Generates [`Counters`] and its list from one table; entries are in wire order.
///
/// `v1` are the counters every version-1 snapshot carries (a decoder rejects fewer);
/// `appended` are counters added later without a version change (spec §2.1: a decoder
/// keeps the ones it knows and ignores the rest, an older snapshot lacks them: zero).
macro_rules! counters {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            v1: [$( $(#[doc = $vdoc:literal])+ $v:ident, )+],
            appended: [$( $(#[doc = $adoc:literal])+ $a:ident, )*],
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[doc = $vdoc])+ pub $v: u64, )+
            $( $(#[doc = $adoc])+ pub $a: u64, )*
        }

        impl $name {
            /// Number of counters an encoder writes: the whole list.
            pub const LEN: usize = [$(stringify!($v),)+ $(stringify!($a),)*].len();

            /// Number of counters a version-1 snapshot must carry (fewer is corrupt);
            /// counters appended later may be absent from it.
            pub const V1: usize = [$(stringify!($v),)+].len();

            /// Every counter's name and meaning, in wire order: what printers iterate and
            /// the spec's §2.1 table is checked against.
            pub const LIST: [CounterInfo; $name::LEN] = [
                $(CounterInfo {
                    name: stringify!($v),
                    meaning: concat!($($vdoc),+).trim_ascii(),
                },)+
                $(CounterInfo {
                    name: stringify!($a),
                    meaning: concat!($($adoc),+).trim_ascii(),
                },)*
            ];

            /// All counters at zero, usable in a `const` (a `static` profiler).
            pub const ZERO: Self = Self {
                $($v: 0,)+
                $($a: 0,)*
            };

            /// Values in wire order.
            pub const fn to_array(&self) -> [u64; $name::LEN] {
                [$(self.$v,)+ $(self.$a,)*]
            }

            /// Counters from values in wire order (what a decoder read; absent ones 0).
            pub const fn from_array(values: [u64; $name::LEN]) -> Self {
                let [$($v,)+ $($a,)*] = values;
                Self { $($v,)+ $($a,)* }
            }

            /// `(name, value)` of every counter in wire order, for printing.
            pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'static str, u64)> {
                Self::LIST.into_iter().map(|c| c.name).zip(self.to_array())
            }
        }
    };
}

counters! {
    /// Everything the sampler had to drop or skip, so nothing is lost silently, and
    /// the exact heap totals when they were counted ([`Counters::heap`]).
    /// Travels in every snapshot, fields in wire order; [`Counters::LIST`] names them.
    #[cfg_attr(all(feature = "defmt", target_os = "none"), derive(defmt::Format))]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Counters {
        v1: [
            /// Allocations that were sampled (whether or not they could be recorded).
            samples,
            /// Samples dropped because the stack table was full.
            stack_table_full,
            /// Samples dropped because the bucket table was full.
            bucket_table_full,
            /// Sampled objects not tracked because the live-object map was full
            /// (their frees cannot be credited).
            live_map_full,
            /// Recordings skipped because the profiler was re-entered (e.g. an interrupt
            /// allocated while the profiler was recording).
            reentrant,
            /// Frees of sampled-looking addresses the live map did not know.
            unknown_frees,
            /// Stacks cut at the maximum depth.
            truncated_stacks,
        ],
        // Append new counters here (and to the spec's §2.1 table): old snapshots still
        // decode, with the new counter at zero.
        appended: [
            /// 1 when the profiler counted every allocation and free exactly (built
            /// with totals on): the four `heap_*` counters after it are then exact.
            /// 0 when it did not (an older encoder, or totals off): they mean nothing.
            heap_totals,
            /// Allocations, every call counted, sampled or not (a realloc counts one
            /// free and one allocation).
            heap_allocs,
            /// Frees, every call counted.
            heap_frees,
            /// Bytes in use: requested sizes of the allocations not yet freed.
            heap_in_use_bytes,
            /// Highest `heap_in_use_bytes` since the profiler started.
            heap_peak_bytes,
            /// ELF `e_machine` of the code that wrote the snapshot (40 Arm, 243 RISC-V,
            /// 62 x86-64, 183 AArch64), so the host refuses an ELF of another
            /// architecture; 0 when unknown (an older encoder).
            elf_machine,
        ],
    }
}

/// ELF `e_machine` of the target this crate is compiled for: what a snapshot's
/// `elf_machine` counter says (0 for a target without a number here).
pub const ELF_MACHINE: u64 = if cfg!(target_arch = "arm") {
    40 // EM_ARM
} else if cfg!(any(target_arch = "riscv32", target_arch = "riscv64")) {
    243 // EM_RISCV
} else if cfg!(target_arch = "x86_64") {
    62 // EM_X86_64
} else if cfg!(target_arch = "aarch64") {
    183 // EM_AARCH64
} else if cfg!(target_arch = "x86") {
    3 // EM_386
} else if cfg!(target_arch = "xtensa") {
    94 // EM_XTENSA
} else if cfg!(target_arch = "msp430") {
    105 // EM_MSP430
} else if cfg!(target_arch = "avr") {
    83 // EM_AVR
} else {
    0
};

/// The exact heap totals a snapshot carries when its profiler counted them (Memfault's
/// heap stats, Go's `MemStats`): a typed view of the `heap_*` counters, so "not
/// counted" is `None` rather than a row of zeros that would read as an empty heap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HeapTotals {
    /// Allocations, every call (a realloc is a free and an allocation).
    pub allocs: u64,
    /// Frees, every call.
    pub frees: u64,
    /// Requested bytes of the allocations not yet freed.
    pub in_use_bytes: u64,
    /// Highest `in_use_bytes` seen.
    pub peak_bytes: u64,
}

impl HeapTotals {
    /// Objects in use: allocations not yet freed.
    pub const fn in_use_objects(&self) -> u64 {
        self.allocs.wrapping_sub(self.frees)
    }
}

impl Counters {
    /// The exact heap totals, `None` when the snapshot's profiler did not count them.
    pub const fn heap(&self) -> Option<HeapTotals> {
        if self.heap_totals == 0 {
            return None;
        }
        Some(HeapTotals {
            allocs: self.heap_allocs,
            frees: self.heap_frees,
            in_use_bytes: self.heap_in_use_bytes,
            peak_bytes: self.heap_peak_bytes,
        })
    }

    /// Store `heap` in the `heap_*` counters (`None`: not counted, all zero).
    pub const fn set_heap(&mut self, heap: Option<HeapTotals>) {
        let (flag, t) = match heap {
            Some(t) => (1, t),
            None => (
                0,
                HeapTotals {
                    allocs: 0,
                    frees: 0,
                    in_use_bytes: 0,
                    peak_bytes: 0,
                },
            ),
        };
        self.heap_totals = flag;
        self.heap_allocs = t.allocs;
        self.heap_frees = t.frees;
        self.heap_in_use_bytes = t.in_use_bytes;
        self.heap_peak_bytes = t.peak_bytes;
    }
}

/// The exact heap totals as a profiler keeps them, updated on every call.
///
/// Where the target has read-modify-write atomics: relaxed `fetch_add`s, no lock
/// (counts are two words on 32-bit targets, the high one bumped on the rare carry, so
/// they do not wrap after 2^32 calls). Where it has none (thumbv6m): the same update in
/// a critical section. Bytes and the peak are `usize`: they cannot exceed memory.
pub(crate) struct Tally {
    #[cfg(target_has_atomic = "ptr")]
    atomic: atomic::Tally,
    #[cfg(not(target_has_atomic = "ptr"))]
    locked: critical_section::Mutex<core::cell::Cell<HeapTotals>>,
}

impl Tally {
    pub(crate) const fn new() -> Self {
        Tally {
            #[cfg(target_has_atomic = "ptr")]
            atomic: atomic::Tally::new(),
            #[cfg(not(target_has_atomic = "ptr"))]
            locked: critical_section::Mutex::new(core::cell::Cell::new(HeapTotals {
                allocs: 0,
                frees: 0,
                in_use_bytes: 0,
                peak_bytes: 0,
            })),
        }
    }

    /// One allocation of `size` bytes.
    #[inline(always)]
    pub(crate) fn alloc(&self, size: usize) {
        #[cfg(target_has_atomic = "ptr")]
        self.atomic.alloc(size);
        #[cfg(not(target_has_atomic = "ptr"))]
        critical_section::with(|cs| {
            let c = self.locked.borrow(cs);
            let mut t = c.get();
            t.allocs = t.allocs.wrapping_add(1);
            t.in_use_bytes = t.in_use_bytes.wrapping_add(size as u64);
            t.peak_bytes = t.peak_bytes.max(t.in_use_bytes);
            c.set(t);
        });
    }

    /// One free of `size` bytes.
    #[inline(always)]
    pub(crate) fn free(&self, size: usize) {
        #[cfg(target_has_atomic = "ptr")]
        self.atomic.free(size);
        #[cfg(not(target_has_atomic = "ptr"))]
        critical_section::with(|cs| {
            let c = self.locked.borrow(cs);
            let mut t = c.get();
            t.frees = t.frees.wrapping_add(1);
            t.in_use_bytes = t.in_use_bytes.wrapping_sub(size as u64);
            c.set(t);
        });
    }

    /// The totals now.
    pub(crate) fn get(&self) -> HeapTotals {
        #[cfg(target_has_atomic = "ptr")]
        return self.atomic.get();
        #[cfg(not(target_has_atomic = "ptr"))]
        return critical_section::with(|cs| self.locked.borrow(cs).get());
    }
}

#[cfg(target_has_atomic = "ptr")]
mod atomic {
    use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    use super::HeapTotals;

    /// A count that does not wrap at `usize::MAX`: a low word and a carry word.
    struct Wide {
        lo: AtomicUsize,
        hi: AtomicUsize,
    }

    impl Wide {
        const fn new() -> Self {
            Wide {
                lo: AtomicUsize::new(0),
                hi: AtomicUsize::new(0),
            }
        }

        #[inline(always)]
        fn bump(&self) {
            if self.lo.fetch_add(1, Relaxed) == usize::MAX {
                self.hi.fetch_add(1, Relaxed);
            }
        }

        /// The value; re-read when a carry landed in between (a 32-bit target after
        /// 2^32 calls), so the two words belong together.
        fn get(&self) -> u64 {
            loop {
                let hi = self.hi.load(Relaxed);
                let lo = self.lo.load(Relaxed);
                if self.hi.load(Relaxed) == hi {
                    // `checked_shl`: on a 64-bit target the carry word is always 0 and
                    // a shift by 64 would overflow.
                    return (hi as u64).checked_shl(usize::BITS).unwrap_or(0) | lo as u64;
                }
            }
        }
    }

    pub(super) struct Tally {
        allocs: Wide,
        frees: Wide,
        in_use: AtomicUsize,
        peak: AtomicUsize,
    }

    impl Tally {
        pub(super) const fn new() -> Self {
            Tally {
                allocs: Wide::new(),
                frees: Wide::new(),
                in_use: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
            }
        }

        #[inline(always)]
        pub(super) fn alloc(&self, size: usize) {
            self.allocs.bump();
            let now = self.in_use.fetch_add(size, Relaxed).wrapping_add(size);
            // The peak moves rarely: a load and a branch, the read-modify-write only
            // when a new high is reached.
            if now > self.peak.load(Relaxed) {
                self.peak.fetch_max(now, Relaxed);
            }
        }

        #[inline(always)]
        pub(super) fn free(&self, size: usize) {
            self.frees.bump();
            self.in_use.fetch_sub(size, Relaxed);
        }

        pub(super) fn get(&self) -> HeapTotals {
            // Frees before allocations: a free read is never ahead of its allocation.
            let frees = self.frees.get();
            let in_use_bytes = self.in_use.load(Relaxed) as u64;
            HeapTotals {
                allocs: self.allocs.get(),
                frees,
                in_use_bytes,
                peak_bytes: self.peak.load(Relaxed) as u64,
            }
        }
    }
}
