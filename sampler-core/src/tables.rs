//! The profiler's fixed-capacity tables: interned stacks, buckets with Go-style record
//! cycles, and the live-object map. Plain data, no locking: [`crate::Profiler`] owns
//! one `Tables` behind its critical section.
//!
//! Nothing here allocates or panics: a full table is reported to the caller, which
//! counts the dropped sample.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use heapless::index_map::FnvIndexMap;

use crate::Cycle;

/// Sampled allocations and frees of one bucket during one record cycle (Go's
/// `memRecordCycle` without the byte fields: every object in a bucket has the bucket's
/// size, so bytes are `count × size` and cost no RAM).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub allocs: u32,
    pub frees: u32,
}

impl Counts {
    const ZERO: Counts = Counts {
        allocs: 0,
        frees: 0,
    };

    fn add(&mut self, o: Counts) {
        self.allocs = self.allocs.wrapping_add(o.allocs);
        self.frees = self.frees.wrapping_add(o.frees);
    }

    /// Widen to the snapshot's [`Cycle`] for objects of `size` bytes.
    pub fn to_cycle(self, size: usize) -> Cycle {
        let size = size as u64;
        Cycle {
            allocs: u64::from(self.allocs),
            frees: u64::from(self.frees),
            alloc_bytes: u64::from(self.allocs).wrapping_mul(size),
            free_bytes: u64::from(self.frees).wrapping_mul(size),
        }
    }
}

/// A bucket's record cycles: Go's `memRecord { active, future[3] }`.
///
/// # The rule (cycle `c` = number of [`advance`](MemRecord::advance) calls so far)
///
/// * an allocation sampled during cycle `c` is added to `future[(c + 2) % 3]`
///   (Go's `mProf_Malloc`);
/// * a free during cycle `c` is added to `future[(c + 2) % 3]` too. Go sends *sweep*
///   frees to `future[(c + 1) % 3]` because the GC frees an object only in the cycle
///   after it died; our frees are synchronous (Go's "explicit frees" case), and a free
///   sent to `c + 1` would be published one cycle *before* its allocation, showing
///   negative in-use for a cycle;
/// * `advance` is Go's mark termination followed by a finished sweep:
///   `mProf_NextCycle` (`c += 1`), `mProf_Flush` (fold `future[c % 3]` into `active`
///   and clear it) and `mProf_PostSweep` (fold `future[(c + 1) % 3]`, i.e. the old
///   cycle's `c + 2` slot, and clear it).
///
/// So `active` is exactly the sum of every whole cycle before the last `advance`:
/// an object allocated and freed between two advances never shows as in use; one
/// allocated before an advance and not yet freed shows as in use from that advance on;
/// its free shows from the advance after the free. Nothing is published mid-cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemRecord {
    /// Whole cycles up to the last advance: what a snapshot publishes.
    pub active: Counts,
    /// Cycles still open.
    pub future: [Counts; 3],
}

impl MemRecord {
    const ZERO: MemRecord = MemRecord {
        active: Counts::ZERO,
        future: [Counts::ZERO; 3],
    };

    // Cycles are passed as `phase = cycle % 3` (kept next to the cycle counter): no
    // 64-bit division on a 32-bit MCU.
    fn slot(&mut self, phase: u8) -> &mut Counts {
        let [a, b, c] = &mut self.future;
        match (phase + 2) % 3 {
            0 => a,
            1 => b,
            _ => c,
        }
    }

    /// An allocation sampled during a cycle of phase `phase` (= cycle % 3).
    pub fn alloc(&mut self, phase: u8) {
        let s = self.slot(phase);
        s.allocs = s.allocs.wrapping_add(1);
    }

    /// A free of a sampled object during a cycle of phase `phase` (= cycle % 3).
    pub fn free(&mut self, phase: u8) {
        let s = self.slot(phase);
        s.frees = s.frees.wrapping_add(1);
    }

    /// Close the cycle of phase `phase` (= cycle % 3, before the increment): see the
    /// type's doc.
    pub fn advance(&mut self, phase: u8) {
        let next = (phase + 1) % 3;
        for i in [next, (next + 1) % 3] {
            if let Some(f) = self.future.get_mut(usize::from(i)) {
                let v = core::mem::take(f);
                self.active.add(v);
            }
        }
    }
}

// Every table starts all-zero (unused slots are zero), so a profiler in a `static`
// lands in .bss, not in a flash image of .data.

/// One (stack, size) bucket. 40 bytes on a 32-bit target.
#[derive(Clone, Copy, Debug)]
pub struct BucketSlot {
    /// Object size in bytes.
    pub size: usize,
    pub record: MemRecord,
    /// Index of the stack in the stack table.
    pub stack: u16,
    /// Slot in use (fits in what would be padding).
    used: bool,
}

impl BucketSlot {
    const EMPTY: BucketSlot = BucketSlot {
        size: 0,
        record: MemRecord::ZERO,
        stack: 0,
        used: false,
    };
}

/// One interned stack: where its frames sit in the shared frame arena.
/// 12 bytes on a 32-bit target (frames themselves: one word each in the arena).
#[derive(Clone, Copy, Debug)]
pub struct StackSlot {
    hash: u32,
    start: u32,
    len: u16,
    used: bool,
}

impl StackSlot {
    const EMPTY: StackSlot = StackSlot {
        hash: 0,
        start: 0,
        len: 0,
        used: false,
    };

    fn used(&self) -> bool {
        self.used
    }
}

// The RAM formula of the README, checked by every 32-bit device build
// (`cargo xtask test` builds thumbv6m, thumbv7em and riscv32imac): 40 B per bucket,
// 12 B per stack, 4 B per frame, 12 B per live-map entry (+ 4 filter bytes).
#[cfg(target_pointer_width = "32")]
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<BucketSlot>() == 40);
    assert!(size_of::<StackSlot>() == 12);
    assert!(size_of::<heapless::Vec<usize, 64>>() == 4 * 64 + 4);
    assert!(size_of::<FnvIndexMap<usize, u16, 64>>() <= 12 * 64 + 8);
};

/// Why a sample could not be recorded (each has a counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    Stacks,
    Buckets,
}

/// All tables, capacities in the type:
/// `S` stacks, `F` frames (shared arena), `B` buckets, `L` live objects.
pub struct Tables<const S: usize, const F: usize, const B: usize, const L: usize> {
    stacks: [StackSlot; S],
    stack_count: usize,
    frames: heapless::Vec<usize, F>,
    buckets: [BucketSlot; B],
    bucket_count: usize,
    /// Sampled address → bucket index, the address kept [hidden](hide) so that a
    /// leak checker scanning RAM does not take the profiler's own bookkeeping for a
    /// reference that keeps every sampled object alive.
    live: FnvIndexMap<usize, u16, L>,
    /// Number of `advance_cycle` calls.
    pub cycle: u64,
    /// `cycle % 3`.
    phase: u8,
}

/// Mask the live map's addresses are stored under (gperftools' heap checker hides its
/// own pointers the same way): `0x2000_1234` is kept as `0xd03a_4d4f`, which no
/// conservative scan of a RAM image takes for a pointer into the heap.
const HIDE_MASK: usize = 0xF03A_5F7B_F03A_5F7B_u64 as usize;

/// An address as the live map stores it, and back (the mask is its own inverse).
const fn hide(addr: usize) -> usize {
    addr ^ HIDE_MASK
}

fn mix(h: u32, x: usize) -> u32 {
    let x = x as u64;
    let v = (u64::from(h) ^ x ^ (x >> 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (v >> 32) as u32
}

impl<const S: usize, const F: usize, const B: usize, const L: usize> Tables<S, F, B, L> {
    const CHECK: () = {
        assert!(
            S.is_power_of_two() && S <= u16::MAX as usize,
            "stack capacity: a power of two up to 32768"
        );
        assert!(
            B.is_power_of_two() && B <= u16::MAX as usize,
            "bucket capacity: a power of two up to 32768"
        );
        assert!(F < u32::MAX as usize, "frame arena capacity must fit u32");
        assert!(
            L.is_power_of_two() && L > 1,
            "live map capacity: a power of two > 1"
        );
    };

    /// Empty tables (`const`: they live inside a `static` allocator).
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECK;
        Tables {
            stacks: [StackSlot::EMPTY; S],
            stack_count: 0,
            frames: heapless::Vec::new(),
            buckets: [BucketSlot::EMPTY; B],
            bucket_count: 0,
            live: FnvIndexMap::new(),
            cycle: 0,
            phase: 0,
        }
    }

    /// Intern `frames`; returns the stack index.
    pub fn intern(&mut self, frames: &[usize]) -> Result<u16, Full> {
        let hash = frames
            .iter()
            .fold(0x811C_9DC5u32 ^ frames.len() as u32, |h, &f| mix(h, f));
        let len = u16::try_from(frames.len()).map_err(|_| Full::Stacks)?;
        let mask = S - 1;
        let mut i = hash as usize & mask;
        for _ in 0..S {
            let slot = self.stacks.get(i).copied().unwrap_or(StackSlot::EMPTY);
            if !slot.used() {
                break;
            }
            if slot.hash == hash && slot.len == len && self.frames_of(slot) == frames {
                return Ok(i as u16);
            }
            i = (i + 1) & mask;
        }
        if self.stack_count >= S {
            return Err(Full::Stacks);
        }
        let start = self.frames.len();
        if self.frames.extend_from_slice(frames).is_err() {
            return Err(Full::Stacks);
        }
        match self.stacks.get_mut(i) {
            Some(slot) if !slot.used() => {
                *slot = StackSlot {
                    hash,
                    start: start as u32,
                    len,
                    used: true,
                };
                self.stack_count += 1;
                Ok(i as u16)
            }
            _ => {
                self.frames.truncate(start);
                Err(Full::Stacks)
            }
        }
    }

    fn frames_of(&self, s: StackSlot) -> &[usize] {
        let start = s.start as usize;
        self.frames
            .get(start..start + usize::from(s.len))
            .unwrap_or(&[])
    }

    /// Find or create the bucket for (stack, size); returns its index.
    pub fn bucket(&mut self, stack: u16, size: usize) -> Result<u16, Full> {
        let mask = B - 1;
        let mut i = (mix(u32::from(stack), size) as usize) & mask;
        for _ in 0..B {
            let Some(b) = self.buckets.get_mut(i) else {
                break;
            };
            if !b.used {
                *b = BucketSlot {
                    size,
                    record: MemRecord::ZERO,
                    stack,
                    used: true,
                };
                self.bucket_count += 1;
                return Ok(i as u16);
            }
            if b.stack == stack && b.size == size {
                return Ok(i as u16);
            }
            i = (i + 1) & mask;
        }
        Err(Full::Buckets)
    }

    /// Record a sampled allocation in bucket `b`.
    pub fn alloc_in(&mut self, b: u16) {
        let c = self.phase;
        if let Some(slot) = self.buckets.get_mut(usize::from(b)) {
            slot.record.alloc(c);
        }
    }

    /// Remember a sampled object; `false` when the live map is full.
    pub fn track(&mut self, addr: usize, bucket: u16) -> bool {
        self.live.insert(hide(addr), bucket).is_ok()
    }

    /// Forget a sampled object and credit its free; `false` if it was not tracked.
    pub fn untrack(&mut self, addr: usize) -> bool {
        let Some(b) = self.live.remove(&hide(addr)) else {
            return false;
        };
        let c = self.phase;
        if let Some(slot) = self.buckets.get_mut(usize::from(b)) {
            slot.record.free(c);
        }
        true
    }

    /// Close the current record cycle in every bucket.
    pub fn advance(&mut self) {
        let p = self.phase;
        for b in self.buckets.iter_mut().filter(|b| b.used) {
            b.record.advance(p);
        }
        self.cycle = self.cycle.wrapping_add(1);
        self.phase = (p + 1) % 3;
    }

    /// Number of sampled objects currently tracked.
    pub fn live_objects(&self) -> usize {
        self.live.len()
    }

    /// Live sampled objects: (address, stack index, size), for the object table. An
    /// entry whose bucket slot is gone (cannot happen: buckets are never freed) is
    /// skipped, and the encoder then reports the count it announced as a lie.
    pub fn live(&self) -> impl ExactSizeIterator<Item = (usize, u16, usize)> + '_ {
        let it = self.live.iter().filter_map(|(&k, &b)| {
            let slot = self.buckets.get(usize::from(b)).filter(|s| s.used)?;
            Some((hide(k), slot.stack, slot.size))
        });
        Counted {
            it,
            left: self.live.len(),
        }
    }

    /// Interned stacks: (id, frames).
    pub fn stacks(&self) -> impl ExactSizeIterator<Item = (u16, &[usize])> + '_ {
        let it = self
            .stacks
            .iter()
            .enumerate()
            .filter(|(_, s)| s.used())
            .map(|(i, s)| (i as u16, self.frames_of(*s)));
        Counted {
            it,
            left: self.stack_count,
        }
    }

    /// Buckets in use.
    pub fn buckets(&self) -> impl ExactSizeIterator<Item = &BucketSlot> + '_ {
        Counted {
            it: self.buckets.iter().filter(|b| b.used),
            left: self.bucket_count,
        }
    }
}

impl<const S: usize, const F: usize, const B: usize, const L: usize> Default
    for Tables<S, F, B, L>
{
    fn default() -> Self {
        Self::new()
    }
}

/// An iterator whose length is known from a counter kept alongside the table.
struct Counted<I> {
    it: I,
    left: usize,
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let x = self.it.next()?;
        self.left = self.left.saturating_sub(1);
        Some(x)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Counted<I> {
    // Not the default, which asserts that `size_hint` agrees: a panic path the device
    // build would keep (the C library's link check finds it).
    fn len(&self) -> usize {
        self.left
    }
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

    fn active(t: &Tables<8, 64, 8, 8>) -> Vec<(usize, Counts)> {
        t.buckets().map(|b| (b.size, b.record.active)).collect()
    }

    fn in_use(c: Counts) -> i64 {
        i64::from(c.allocs) - i64::from(c.frees)
    }

    #[test]
    fn alloc_and_free_in_one_cycle_never_show_as_in_use() {
        let mut t = Tables::<8, 64, 8, 8>::new();
        let s = t.intern(&[1, 2]).unwrap();
        let b = t.bucket(s, 16).unwrap();
        t.alloc_in(b);
        assert!(t.track(0x100, b));
        assert!(t.untrack(0x100));
        for _ in 0..5 {
            assert_eq!(in_use(active(&t)[0].1), 0);
            t.advance();
        }
        assert_eq!(
            active(&t)[0].1,
            Counts {
                allocs: 1,
                frees: 1
            }
        );
    }

    #[test]
    fn an_allocation_is_published_by_the_next_advance_and_its_free_by_the_one_after() {
        let mut t = Tables::<8, 64, 8, 8>::new();
        let s = t.intern(&[1]).unwrap();
        let b = t.bucket(s, 32).unwrap();
        t.alloc_in(b);
        t.track(0x200, b);
        assert_eq!(active(&t)[0].1, Counts::ZERO, "not visible mid-cycle");
        t.advance();
        assert_eq!(
            active(&t)[0].1,
            Counts {
                allocs: 1,
                frees: 0
            },
            "visible after one advance"
        );
        t.advance();
        t.advance();
        assert_eq!(in_use(active(&t)[0].1), 1, "stays in use");
        t.untrack(0x200);
        assert_eq!(in_use(active(&t)[0].1), 1, "free not visible mid-cycle");
        t.advance();
        assert_eq!(
            active(&t)[0].1,
            Counts {
                allocs: 1,
                frees: 1
            }
        );
    }

    #[test]
    fn record_follows_go_slot_indexing() {
        let mut r = MemRecord::default();
        r.alloc(0); // cycle 0: future[2]
        assert_eq!(r.future[2].allocs, 1);
        r.advance(0); // c = 1: folds future[1] (Go's Flush), future[2] (PostSweep)
        assert_eq!(r.active.allocs, 1);
        r.alloc(1); // future[0]
        r.free(1); // future[0]
        assert_eq!(
            r.future[0],
            Counts {
                allocs: 1,
                frees: 1
            }
        );
        r.advance(1);
        assert_eq!(
            r.active,
            Counts {
                allocs: 2,
                frees: 1
            }
        );
        assert_eq!(r.future, [Counts::ZERO; 3]);
    }

    #[test]
    fn interning_reuses_ids_and_full_tables_are_reported() {
        let mut t = Tables::<2, 4, 2, 2>::new();
        let a = t.intern(&[1, 2]).unwrap();
        assert_eq!(t.intern(&[1, 2]).unwrap(), a);
        // Frame arena (4) full before stack slots (2).
        assert_eq!(t.intern(&[3, 4, 5]), Err(Full::Stacks));
        let b = t.intern(&[3]).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.intern(&[9]), Err(Full::Stacks));
        assert_eq!(t.stacks().len(), 2);
        let x = t.bucket(a, 1).unwrap();
        assert_eq!(t.bucket(a, 1).unwrap(), x);
        t.bucket(b, 1).unwrap();
        assert_eq!(t.bucket(a, 2), Err(Full::Buckets));
        assert_eq!(t.buckets().len(), 2);
        assert!(t.track(1, x));
        assert!(t.track(2, x));
        assert!(!t.track(3, x));
    }
}
