//! The profiler: sampling decision, locking, re-entrancy, counters.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use core::cell::{Cell, RefCell};
use core::sync::atomic::{AtomicIsize, AtomicU8, Ordering::Relaxed};

use critical_section::Mutex;

use crate::counters::Tally;
use crate::lock_stats;
use crate::sampler::{countdown_start, Countdown, IntervalRng};
use crate::stack::StackSource;
use crate::tables::{Full, Tables};
use crate::{Counters, HeapTotals};

/// Filter slots per live-map entry: the free path's "could this be sampled?" check.
const FILTER_WAYS: usize = 4;

/// Everything behind the lock.
pub(crate) struct Locked<const S: usize, const F: usize, const B: usize, const L: usize> {
    pub(crate) tables: Tables<S, F, B, L>,
    pub(crate) counters: Counters,
    pub(crate) rate: usize,
    rng: IntervalRng,
}

/// A heap profiler with fixed capacities: `S` interned stacks, `F` frames in the shared
/// frame arena, `B` buckets, `L` live sampled objects, stacks of at most `D` frames.
///
/// `TOTALS = true` also counts every allocation and free exactly (bytes and objects in
/// use, the peak, allocation and free counts: [`heap`](Self::heap), and in every
/// snapshot). That is two or three relaxed read-modify-write atomics per call (a
/// critical section on thumbv6m), which the not-sampled fast path does not otherwise
/// pay, hence a choice; off by default (see "Exact heap totals" in the README).
///
/// `const`-constructible so it (or a [`ProfiledAlloc`](crate::ProfiledAlloc) holding it)
/// can be a `static`. RAM on a 32-bit target:
/// `12·S + 4·F + 40·B + 16·L` bytes plus a few words (see the README's "RAM footprint").
pub struct Profiler<
    const S: usize,
    const F: usize,
    const B: usize,
    const L: usize,
    const D: usize = 32,
    const TOTALS: bool = false,
> {
    countdown: Countdown,
    /// Counting filter over sampled addresses: a free whose slot is zero cannot be a
    /// sampled object and skips the lock. Written only inside the critical section.
    filter: [[AtomicU8; FILTER_WAYS]; L],
    /// Re-entrant entries, counted outside the (busy) tables.
    reentrant: Mutex<Cell<u64>>,
    /// Exact totals, updated on every call when `TOTALS` (untouched otherwise).
    totals: Tally,
    locked: Mutex<RefCell<Locked<S, F, B, L>>>,
}

/// What happened to one `record_alloc` call (mostly for tests and pools).
#[cfg_attr(all(feature = "defmt", target_os = "none"), derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Not sampled: the fast path.
    Skipped,
    /// Sampled and recorded.
    Sampled,
    /// Sampled but dropped; the reason is counted in [`Counters`].
    Dropped,
}

impl<
        const S: usize,
        const F: usize,
        const B: usize,
        const L: usize,
        const D: usize,
        const TOTALS: bool,
    > Profiler<S, F, B, L, D, TOTALS>
{
    const CHECK: () = assert!(D > 0 && D <= u16::MAX as usize, "stack depth: 1 ..= 65535");

    /// A profiler sampling on average every `rate` bytes (1 = every allocation,
    /// 0 = off), its random intervals seeded with `seed`.
    ///
    /// The non-zero settings make the whole `static` an initialized (.data) object, so
    /// its image takes flash as large as its tables; on an MCU prefer
    /// [`off`](Self::off) + [`start`](Self::start), which keeps it in .bss.
    pub const fn new(rate: usize, seed: u64) -> Self {
        Self::build(Countdown::new(rate), rate, seed)
    }

    /// A stopped profiler whose every byte is zero (a `static` of it costs no flash);
    /// call [`start`](Self::start) at boot.
    pub const fn off() -> Self {
        Self::build(Countdown::zero(), 0, 0)
    }

    /// Start (or restart) sampling every `rate` bytes on average with intervals seeded
    /// by `seed`. `false` if called from inside the profiler.
    pub fn start(&self, rate: usize, seed: u64) -> bool {
        self.with_locked(|l| {
            l.rate = rate;
            l.rng = IntervalRng::new(seed);
            self.countdown.reset_all(countdown_start(rate));
        })
        .is_some()
    }

    const fn build(countdown: Countdown, rate: usize, seed: u64) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECK;
        Profiler {
            countdown,
            filter: [const { [const { AtomicU8::new(0) }; FILTER_WAYS] }; L],
            reentrant: Mutex::new(Cell::new(0)),
            totals: Tally::new(),
            locked: Mutex::new(RefCell::new(Locked {
                tables: Tables::new(),
                counters: Counters::ZERO,
                rate,
                rng: IntervalRng::new(seed),
            })),
        }
    }

    /// Record an allocation of `size` bytes at `ptr` (pools, arenas: anything that is
    /// not a `GlobalAlloc`). Cheap unless sampled: a subtract and a branch (and the
    /// exact totals' atomics when `TOTALS`); through `ProfiledAlloc` on a Cortex-M3,
    /// 7 instructions over the inner allocator's, 7 for the free of an unsampled
    /// object (`cargo xtask device` counts them and enforces 9 / 9).
    ///
    /// When `stack` walks the stack, the first frame recorded is the return address
    /// into the function this call was inlined into: the caller of `record_alloc`, and
    /// for [`ProfiledAlloc`](crate::ProfiledAlloc) the allocator shim when the compiler
    /// kept it out of line (`__rust_alloc` at opt-level `s`), the allocating function
    /// itself when it inlined the shim (opt-level 3, LTO). The host trims the shim's
    /// frames by symbol, so both give the allocating function as the leaf. A slice is
    /// recorded as given.
    #[inline(always)]
    pub fn record_alloc<St: StackSource + ?Sized>(
        &self,
        ptr: *const u8,
        size: usize,
        stack: &St,
    ) -> Recorded {
        self.record_alloc_at(ptr, size, stack).0
    }

    /// [`record_alloc`](Self::record_alloc), handing `ptr` back: the allocator shim
    /// returns the slow path's copy, so it keeps nothing of its own across that call
    /// (on x86_64 no callee-saved register to save and restore on the fast path).
    #[inline(always)]
    pub(crate) fn record_alloc_at<St: StackSource + ?Sized>(
        &self,
        ptr: *const u8,
        size: usize,
        stack: &St,
    ) -> (Recorded, *const u8) {
        if TOTALS {
            self.totals.alloc(size);
        }
        let Some(shard) = self.countdown.take(size) else {
            return (Recorded::Skipped, ptr);
        };
        let r = self.sampled(ptr, size, stack, shard);
        // The call must not become a tail call (`return record_alloc(..)` in the
        // caller), which would leave the caller's frame before it is walked. A compiler
        // fence after it (no instruction) is enough, where `black_box` of the result
        // also cost a stack slot, set up on the not-sampled path too (2 instructions
        // on thumbv7m).
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        r
    }

    /// Record the free of `ptr`, of the `size` given to its [`record_alloc`]
    /// (the exact totals subtract it; without `TOTALS` it is not used, and a pool that
    /// does not know its sizes may pass 0). A free of an object that was not sampled
    /// usually costs one filter load that misses (no lock).
    ///
    /// [`record_alloc`]: Self::record_alloc
    #[inline(always)]
    pub fn record_free(&self, ptr: *const u8, size: usize) {
        self.count_free(size);
        self.forget(ptr);
    }

    /// The exact totals' half of a free (`realloc` counts it only once it succeeded).
    #[inline(always)]
    pub(crate) fn count_free(&self, size: usize) {
        if TOTALS {
            self.totals.free(size);
        }
    }

    /// The live map's half of a free: a sampled object at `ptr` is no longer in use.
    #[inline(always)]
    pub(crate) fn forget(&self, ptr: *const u8) {
        if self.may_track(ptr) {
            self.free_slow(ptr);
        }
    }

    /// The filter's answer: `false` when `ptr` is certainly not a tracked sampled
    /// object (one load that misses, usually), `true` when it may be.
    #[inline(always)]
    pub(crate) fn may_track(&self, ptr: *const u8) -> bool {
        let addr = ptr as usize;
        self.filter_hit(Self::h1(addr)) && self.filter_hit(Self::h2(addr))
    }

    // The two slots of a counting Bloom filter (k = 2: a freed address that is reused
    // over and over rarely collides with a live sampled one in both).
    #[inline(always)]
    fn h1(addr: usize) -> usize {
        Self::filter_index(addr, 0x9E37_79B9_7F4A_7C15, 0x9E37_79B9)
    }

    #[inline(always)]
    fn h2(addr: usize) -> usize {
        Self::filter_index(addr, 0xC2B2_AE3D_27D4_EB4F, 0x85EB_CA6B)
    }

    /// Multiplicative hashing of the address into `0 .. L * FILTER_WAYS`. With a
    /// power-of-two filter (the usual case) the top bits of a word-sized product
    /// (Fibonacci hashing: one multiply and a shift, where a 64-bit product cost a
    /// multiply-accumulate and two more constants on 32-bit MCUs); otherwise bits 32..
    /// of a 64-bit product, reduced modulo the size.
    ///
    /// Allocations are word aligned, so the address's low three bits carry nothing: the
    /// power-of-two case multiplies the address itself by `k / 8` (made odd), which for
    /// `addr = 8·x` is `x · k` to within `16·x`, the hash of `addr >> 3` by `k` without
    /// the shift (one instruction of the free path).
    #[inline(always)]
    fn filter_index(addr: usize, k64: u64, k32: u32) -> usize {
        let n = L * FILTER_WAYS;
        if n.is_power_of_two() && n > 1 {
            let k = if usize::BITS == 64 {
                (k64 >> 3) as usize
            } else {
                (k32 >> 3) as usize
            } | 1;
            addr.wrapping_mul(k) >> (usize::BITS - n.trailing_zeros())
        } else {
            let x = addr >> 3;
            ((x as u64).wrapping_mul(k64) >> 32) as usize % n
        }
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> Option<&AtomicU8> {
        self.filter.as_flattened().get(i)
    }

    #[inline(always)]
    fn filter_hit(&self, i: usize) -> bool {
        self.slot(i).is_some_and(|s| s.load(Relaxed) != 0)
    }

    fn filter_slots(&self, addr: usize) -> [Option<&AtomicU8>; 2] {
        [self.slot(Self::h1(addr)), self.slot(Self::h2(addr))]
    }

    fn filter_add(&self, addr: usize) {
        for s in self.filter_slots(addr).into_iter().flatten() {
            // Inside the critical section: the only writer. Saturates (a stuck slot is
            // a false positive, never a missed free).
            let v = s.load(Relaxed);
            s.store(v.saturating_add(1), Relaxed);
        }
    }

    fn filter_remove(&self, addr: usize) {
        for s in self.filter_slots(addr).into_iter().flatten() {
            let v = s.load(Relaxed);
            if v != 0 && v != u8::MAX {
                s.store(v - 1, Relaxed);
            }
        }
    }

    /// The slow path: a sampled allocation. Captures the stack, interns it, finds the
    /// bucket, tracks the address; every failure is a counter.
    ///
    /// Never inlined, and its own frame is the stack boundary: a local here lies below
    /// this function's frame record and above every frame it calls, so a walker skips
    /// exactly the profiler's frames and starts at this function's return address. That
    /// holds at every opt-level and with LTO, unlike a local in an `#[inline]` caller,
    /// which lands in whatever frame the caller was inlined into.
    #[cold]
    #[inline(never)]
    fn sampled<St: StackSource + ?Sized>(
        &self,
        ptr: *const u8,
        size: usize,
        stack: &St,
        shard: &AtomicIsize,
    ) -> (Recorded, *const u8) {
        let marker = 0u8;
        let boundary = core::hint::black_box(core::ptr::addr_of!(marker)) as usize;
        let addr = ptr as usize;
        let r = lock_stats::with(lock_stats::Path::Sampled, |cs| {
            let Ok(mut g) = self.locked.borrow(cs).try_borrow_mut() else {
                // Re-entered (the stack source, an interrupt or a sink allocated while
                // we hold the tables): count, don't recurse. The countdown stays ≤ 0,
                // so the next allocation is sampled instead.
                let r = self.reentrant.borrow(cs);
                r.set(r.get().wrapping_add(1));
                return Recorded::Dropped;
            };
            let l = &mut *g;
            let next = l.rng.next_interval(l.rate);
            Countdown::reset(shard, next);
            if l.rate == 0 {
                return Recorded::Skipped;
            }
            l.counters.samples = l.counters.samples.wrapping_add(1);
            let mut frames = [0usize; D];
            let cap = stack.capture(boundary, &mut frames);
            if cap.truncated {
                l.counters.truncated_stacks = l.counters.truncated_stacks.wrapping_add(1);
            }
            let frames = frames.get(..cap.len).unwrap_or(&[]);
            let bucket = match l
                .tables
                .intern(frames)
                .and_then(|s| l.tables.bucket(s, size))
            {
                Ok(b) => b,
                Err(Full::Stacks) => {
                    l.counters.stack_table_full = l.counters.stack_table_full.wrapping_add(1);
                    return Recorded::Dropped;
                }
                Err(Full::Buckets) => {
                    l.counters.bucket_table_full = l.counters.bucket_table_full.wrapping_add(1);
                    return Recorded::Dropped;
                }
            };
            l.tables.alloc_in(bucket);
            if l.tables.track(addr, bucket) {
                self.filter_add(addr);
            } else {
                l.counters.live_map_full = l.counters.live_map_full.wrapping_add(1);
            }
            Recorded::Sampled
        });
        (r, ptr)
    }

    /// [`forget`](Self::forget) of a `ptr` the filter may hold: takes the lock.
    #[cold]
    #[inline(never)]
    pub(crate) fn free_slow(&self, ptr: *const u8) {
        let addr = ptr as usize;
        lock_stats::with(lock_stats::Path::Free, |cs| {
            let Ok(mut g) = self.locked.borrow(cs).try_borrow_mut() else {
                let r = self.reentrant.borrow(cs);
                r.set(r.get().wrapping_add(1));
                return;
            };
            if g.tables.untrack(addr) {
                self.filter_remove(addr);
            } else {
                g.counters.unknown_frees = g.counters.unknown_frees.wrapping_add(1);
            }
        })
    }

    /// Close the current record cycle: everything recorded so far becomes the published
    /// view (see [`MemRecord`](crate::tables::MemRecord) for the exact rule). Call it
    /// where the heap means something: the end of a main-loop turn, a timer tick.
    ///
    /// Touches every bucket with interrupts off: O(`B`). Returns `false` (and counts a
    /// re-entry) when called from inside the profiler.
    pub fn advance_cycle(&self) -> bool {
        self.with_locked(|l| l.tables.advance()).is_some()
    }

    /// Change the mean sampling interval (0 = off, 1 = every allocation).
    pub fn set_rate(&self, rate: usize) -> bool {
        self.with_locked(|l| {
            l.rate = rate;
            self.countdown.reset_all(countdown_start(rate));
        })
        .is_some()
    }

    /// Restart the interval generator from `seed` (e.g. a seed chosen at run time).
    pub fn reseed(&self, seed: u64) -> bool {
        self.with_locked(|l| l.rng = IntervalRng::new(seed))
            .is_some()
    }

    /// The current sampling rate.
    pub fn rate(&self) -> usize {
        self.with_locked(|l| l.rate).unwrap_or(0)
    }

    /// Everything dropped or skipped so far, and the exact totals when `TOTALS`.
    pub fn counters(&self) -> Counters {
        critical_section::with(|cs| {
            let mut c = self
                .locked
                .borrow(cs)
                .try_borrow()
                .map(|l| l.counters)
                .unwrap_or_default();
            c.reentrant = self.reentrant.borrow(cs).get();
            c.set_heap(self.heap());
            c.elf_machine = crate::counters::ELF_MACHINE;
            c
        })
    }

    /// The exact heap totals (bytes and objects in use, the peak, allocation and free
    /// counts since the profiler was created), `None` unless `TOTALS`. Counted on every
    /// call, whatever the sampling rate (also at rate 0).
    pub fn heap(&self) -> Option<HeapTotals> {
        TOTALS.then(|| self.totals.get())
    }

    /// Run `f` on the tables with the lock held (`None` when re-entered). Snapshots are
    /// written from here, so keep `f` short on a device: interrupts are off.
    pub(crate) fn with_locked<R>(&self, f: impl FnOnce(&mut Locked<S, F, B, L>) -> R) -> Option<R> {
        critical_section::with(|cs| match self.locked.borrow(cs).try_borrow_mut() {
            Ok(mut g) => Some(f(&mut g)),
            Err(_) => {
                let r = self.reentrant.borrow(cs);
                r.set(r.get().wrapping_add(1));
                None
            }
        })
    }

    /// Read-only view of the tables under the lock (`None` when re-entered).
    pub fn with_tables<R>(&self, f: impl FnOnce(&Tables<S, F, B, L>) -> R) -> Option<R> {
        self.with_locked(|l| f(&l.tables))
    }

    /// Number of sampled objects currently tracked in the live map.
    pub fn live_objects(&self) -> usize {
        self.with_tables(|t| t.live_objects()).unwrap_or(0)
    }
}

/// What the not-sampled paths write, byte for byte: a free that the filter rules out
/// writes nothing at all, a not-sampled allocation writes its countdown shard's cache
/// line only, so threads allocating and freeing at the same time share no written line
/// with each other (the 4-thread pipe of `cargo xtask bench --peers`).
#[cfg(all(test, feature = "std"))]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
mod tests {
    use super::*;
    use crate::NoStack;

    type P = Profiler<64, 1024, 128, 128, 16>;

    /// The profiler's bytes. Nothing here writes while this reads, and the padding is
    /// never written after construction, so two copies differ exactly where a call
    /// stored something.
    fn image(p: &P) -> Vec<u8> {
        let n = core::mem::size_of::<P>();
        // SAFETY: `p` is a live, initialized object of `n` bytes; no other thread
        // touches it during the read.
        unsafe { core::slice::from_raw_parts((p as *const P).cast::<u8>(), n) }.to_vec()
    }

    fn changed(a: &[u8], b: &[u8]) -> Vec<usize> {
        (0..a.len()).filter(|&i| a[i] != b[i]).collect()
    }

    /// A profiler with sampled objects live (so the filter is not empty) at
    /// 0x10_0000, 0x10_0040, ...; sampling every 512 KiB afterwards.
    fn with_live(live: usize) -> Box<P> {
        let p = Box::new(P::new(1, 7));
        for i in 0..live {
            let r = p.record_alloc((0x10_0000 + 64 * i) as *const u8, 32, &[0x1000 + i][..]);
            assert_eq!(r, Recorded::Sampled);
        }
        assert!(p.set_rate(512 * 1024));
        p
    }

    #[test]
    fn a_free_the_filter_rules_out_writes_nothing() {
        let p = with_live(64);
        let before = image(&p);
        let mut ruled_out = 0;
        for i in 0..4000usize {
            let addr = 0x4000_0000 + 16 * i;
            if p.filter_hit(P::h1(addr)) && p.filter_hit(P::h2(addr)) {
                continue; // a filter collision: the slow path, which may write
            }
            ruled_out += 1;
            p.record_free(addr as *const u8, 16);
            let now = image(&p);
            assert!(
                changed(&before, &now).is_empty(),
                "the free of unsampled {addr:#x} wrote the profiler at byte offsets {:?}",
                changed(&before, &now)
            );
        }
        // The filter is not trivially full: most unsampled addresses are ruled out.
        assert!(ruled_out > 3500, "only {ruled_out} of 4000 frees ruled out");
        // And a sampled address still takes the slow path (the filter hits it).
        p.record_free(0x10_0000 as *const u8, 32);
        assert_eq!(p.live_objects(), 63);
        assert_eq!(p.counters().unknown_frees, 0);
    }

    #[test]
    fn a_not_sampled_allocation_writes_one_countdown_line() {
        let p = with_live(8);
        let countdown =
            core::ptr::addr_of!(p.countdown) as usize - core::ptr::addr_of!(*p) as usize;
        let cd_len = core::mem::size_of::<Countdown>();
        let mut before = image(&p);
        let mut seen = 0;
        for i in 0..2000usize {
            if p.record_alloc((0x4000_0000 + 16 * i) as *const u8, 16, &NoStack)
                != Recorded::Skipped
            {
                before = image(&p);
                continue;
            }
            let now = image(&p);
            let diff = changed(&before, &now);
            assert!(!diff.is_empty(), "the countdown was not charged");
            let base = core::ptr::addr_of!(*p) as usize;
            let line = |off: usize| (base + off) / 64;
            assert!(
                diff.iter().all(|&o| line(o) == line(diff[0])
                    && (countdown..countdown + cd_len).contains(&o)),
                "a not-sampled allocation wrote outside one countdown cache line: offsets {diff:?} \
                 (countdown at {countdown}..{})",
                countdown + cd_len
            );
            // Nothing else lives on that line: a shard has its cache line to itself.
            let first = line(diff[0]) * 64 - base;
            assert!(
                first >= countdown && first + 64 <= countdown + cd_len
                    || crate::sampler::SHARDS == 1,
                "the written shard's line [{first}, {}) is shared with other fields",
                first + 64
            );
            before = now;
            seen += 1;
        }
        assert!(
            seen > 1900,
            "only {seen} of 2000 allocations took the fast path"
        );
    }
}
