//! The bounded frame-pointer walker.
//!
//! Every mainstream ABI that keeps a frame pointer keeps a two-word *frame record*
//! `{previous frame pointer, return address}` at a fixed offset from it, so one walker
//! serves all of them; only the register and the offset differ ([`FrameLayout`]).
//! The walk is bounded so that a corrupt chain (a function built without frame
//! pointers, a clobbered stack) can never fault or loop: every record must lie inside
//! the [`StackRange`], be word-aligned, and each frame pointer must be strictly above
//! the previous one (stacks grow down), and at most `out.len()` frames are taken.

use super::{Captured, StackSource};

/// Where the frame record sits relative to the frame pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameLayout {
    /// `[fp] = previous fp`, `[fp + word] = return address`: x86_64 (`rbp`), aarch64
    /// (`x29`), and ARM Thumb with `-C force-frame-pointers=yes` (`r7`, LLVM's
    /// `push {r7, lr}; mov r7, sp` prologue).
    Above,
    /// `[fp - 2 words] = previous fp`, `[fp - word] = return address`: RISC-V `s0`,
    /// per the psABI (fp is the CFA, the record is the top of the frame).
    Below,
}

impl FrameLayout {
    /// The layout of the target this crate is compiled for.
    pub const NATIVE: FrameLayout = if cfg!(any(target_arch = "riscv32", target_arch = "riscv64")) {
        FrameLayout::Below
    } else {
        FrameLayout::Above
    };

    /// (address of the saved fp, address of the return address) for frame pointer `fp`.
    #[inline]
    fn record(self, fp: usize) -> Option<(usize, usize)> {
        const W: usize = core::mem::size_of::<usize>();
        match self {
            FrameLayout::Above => Some((fp, fp.checked_add(W)?)),
            FrameLayout::Below => Some((fp.checked_sub(2 * W)?, fp.checked_sub(W)?)),
        }
    }
}

/// Addresses a stack walk may read: `[lo, hi)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackRange {
    /// A fixed range, e.g. the MCU's stack between two linker symbols, or a kernel
    /// thread's stack.
    Fixed { lo: usize, hi: usize },
    /// The calling thread's stack as the C library reports it (`std` hosts:
    /// `pthread_getattr_np`, cached per thread).
    #[cfg(all(feature = "std", target_os = "linux"))]
    CurrentThread,
}

impl StackRange {
    /// The range to use for this walk.
    fn resolve(self) -> Option<(usize, usize)> {
        match self {
            StackRange::Fixed { lo, hi } => (lo < hi).then_some((lo, hi)),
            #[cfg(all(feature = "std", target_os = "linux"))]
            StackRange::CurrentThread => thread_stack(),
        }
    }
}

/// The calling thread's stack bounds, looked up once per thread.
///
/// `pthread_getattr_np` may allocate (glibc reads `/proc/self/maps` for the main
/// thread); called from the allocator that allocation is detected as re-entrant and
/// counted, and the cached answer serves every later sample on the thread.
#[cfg(all(feature = "std", target_os = "linux"))]
pub(crate) fn thread_stack() -> Option<(usize, usize)> {
    use std::cell::Cell;
    std::thread_local! {
        static BOUNDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    }
    let cached = BOUNDS.try_with(Cell::get).ok()?;
    if cached.0 < cached.1 {
        return Some(cached);
    }
    // SAFETY: plain libc calls on a zeroed attr object owned by this frame, destroyed
    // before returning.
    let bounds = unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = core::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if !ok {
            return None;
        }
        (addr as usize, (addr as usize).checked_add(size)?)
    };
    let _ = BOUNDS.try_with(|b| b.set(bounds));
    Some(bounds)
}

/// Walk a frame-pointer chain starting at `fp`, reading memory through `read`.
///
/// Frames whose frame pointer is at or below `boundary` are skipped (they belong to
/// the profiler); return addresses of the remaining frames go to `out`, innermost
/// first. Thumb return addresses have the interworking bit cleared, so every stored
/// frame is the address of the instruction after the call (the host subtracts one).
///
/// Pure and generic over `read` so the bounds logic is tested on the host against
/// synthetic stacks for every layout.
pub fn walk(
    mut fp: usize,
    boundary: usize,
    (lo, hi): (usize, usize),
    layout: FrameLayout,
    out: &mut [usize],
    read: impl Fn(usize) -> usize,
) -> Captured {
    const W: usize = core::mem::size_of::<usize>();
    let mut len = 0;
    // Even a broken chain ends: fp strictly increases and stays below `hi`.
    while let Some((at_fp, at_ret)) = layout.record(fp) {
        let in_range =
            |a: usize| a >= lo && a.checked_add(W).is_some_and(|e| e <= hi) && a % W == 0;
        if !in_range(at_fp) || !in_range(at_ret) {
            break;
        }
        let next = read(at_fp);
        let ret = read(at_ret);
        if fp > boundary {
            if ret == 0 {
                break;
            }
            let ret = if cfg!(target_arch = "arm") {
                ret & !1
            } else {
                ret
            };
            match out.get_mut(len) {
                Some(slot) => {
                    *slot = ret;
                    len += 1;
                }
                None => {
                    return Captured {
                        len,
                        truncated: true,
                    }
                }
            }
        }
        if next <= fp {
            break;
        }
        fp = next;
    }
    Captured {
        len,
        truncated: false,
    }
}

/// The frame-pointer walker as a [`StackSource`].
///
/// Needs code built with frame pointers (`-C force-frame-pointers=yes`; the default on
/// aarch64 Apple/Linux and for Rust's own std on most hosts). Without them the chain
/// breaks early: stacks come out short, never wrong addresses read outside the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramePointerStack {
    range: StackRange,
}

impl FramePointerStack {
    /// Walk within `range` (only addresses in it are ever read).
    pub const fn new(range: StackRange) -> Self {
        FramePointerStack { range }
    }

    /// Walk within the calling thread's stack (Linux hosts).
    #[cfg(all(feature = "std", target_os = "linux"))]
    pub const fn current_thread() -> Self {
        FramePointerStack {
            range: StackRange::CurrentThread,
        }
    }
}

/// The current frame pointer register of the caller of this (never-inlined) function.
#[inline(always)]
fn frame_pointer() -> usize {
    let fp: usize;
    // SAFETY: reads one register, touches no memory.
    #[cfg(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv32",
        target_arch = "riscv64"
    ))]
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags));
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags));
        #[cfg(target_arch = "arm")]
        core::arch::asm!("mov {}, r7", out(reg) fp, options(nomem, nostack, preserves_flags));
        #[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
        core::arch::asm!("mv {}, s0", out(reg) fp, options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv32",
        target_arch = "riscv64"
    )))]
    {
        fp = 0;
    }
    fp
}

impl StackSource for FramePointerStack {
    #[inline(never)]
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        let Some(range) = self.range.resolve() else {
            return Captured::default();
        };
        let fp = frame_pointer();
        // SAFETY: `walk` only reads word-aligned addresses inside `range`, which the
        // integrator (or the C library) vouches is this thread's mapped stack.
        walk(fp, boundary, range, FrameLayout::NATIVE, out, |a| unsafe {
            core::ptr::read_volatile(a as *const usize)
        })
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
    use std::collections::HashMap;

    const W: usize = core::mem::size_of::<usize>();

    /// A synthetic stack: frame records at the given frame pointers, chained upward.
    fn chain(layout: FrameLayout, fps: &[usize], rets: &[usize]) -> HashMap<usize, usize> {
        let mut mem = HashMap::new();
        for (i, (&fp, &ret)) in fps.iter().zip(rets).enumerate() {
            let next = fps.get(i + 1).copied().unwrap_or(0);
            let (a, r) = layout.record(fp).unwrap();
            mem.insert(a, next);
            mem.insert(r, ret);
        }
        mem
    }

    fn run(
        layout: FrameLayout,
        mem: &HashMap<usize, usize>,
        start: usize,
        boundary: usize,
        range: (usize, usize),
        n: usize,
    ) -> (Vec<usize>, bool) {
        let mut out = vec![0; n];
        let c = walk(start, boundary, range, layout, &mut out, |a| {
            *mem.get(&a).unwrap_or(&0xdead_beef)
        });
        out.truncate(c.len);
        (out, c.truncated)
    }

    #[test]
    fn walks_every_layout_innermost_first_and_skips_the_profiler() {
        for layout in [FrameLayout::Above, FrameLayout::Below] {
            let fps = [0x1000, 0x1040, 0x10a0, 0x1100];
            let rets = [0xA0, 0xB0, 0xC0, 0xD0];
            let mem = chain(layout, &fps, &rets);
            let range = (0x0f00, 0x2000);
            // Boundary just above the first (profiler) frame: it is skipped.
            let (got, trunc) = run(layout, &mem, fps[0], 0x1008, range, 8);
            assert_eq!(got, vec![0xB0, 0xC0, 0xD0], "{layout:?}");
            assert!(!trunc);
            // Room for two frames: truncated.
            let (got, trunc) = run(layout, &mem, fps[0], 0, range, 2);
            assert_eq!(got, vec![0xA0, 0xB0]);
            assert!(trunc);
        }
    }

    #[test]
    fn stops_at_a_chain_leaving_the_range_or_going_down() {
        let layout = FrameLayout::Above;
        let mut mem = chain(layout, &[0x1000, 0x1040], &[0xA0, 0xB0]);
        // Second frame points back down: a loop in a corrupt chain.
        mem.insert(0x1040, 0x1000);
        let (got, _) = run(layout, &mem, 0x1000, 0, (0x0f00, 0x2000), 64);
        assert_eq!(got, vec![0xA0, 0xB0]);
        // Start outside the range: nothing is read at all.
        let (got, _) = run(layout, &mem, 0x1000, 0, (0x1010, 0x2000), 64);
        assert!(got.is_empty());
        // Misaligned frame pointer.
        let (got, _) = run(layout, &mem, 0x1001, 0, (0x0f00, 0x2000), 64);
        assert!(got.is_empty());
    }

    proptest::proptest! {
        /// Whatever the memory holds, the walk only reads aligned addresses in range
        /// and ends within `out.len()` frames.
        #[test]
        fn never_reads_outside_the_range(words in proptest::collection::vec(proptest::prelude::any::<usize>(), 64), start in 0usize..0x400, depth in 0usize..40) {
            let lo = 0x1000usize;
            let hi = lo + 64 * W;
            let reads = std::cell::Cell::new(0usize);
            for layout in [FrameLayout::Above, FrameLayout::Below] {
                let mut out = vec![0; depth];
                let c = walk(lo + start, 0, (lo, hi), layout, &mut out, |a| {
                    assert!(a >= lo && a + W <= hi && a % W == 0, "read {a:#x}");
                    reads.set(reads.get() + 1);
                    words[(a - lo) / W]
                });
                proptest::prop_assert!(c.len <= depth);
            }
            proptest::prop_assert!(reads.get() <= 4 * 64 + 4);
        }
    }
}
