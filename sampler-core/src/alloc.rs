//! `ProfiledAlloc`: any `GlobalAlloc`, profiled, in one line.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use core::alloc::{GlobalAlloc, Layout};

use crate::stack::StackSource;
use crate::Profiler;

/// Wraps an allocator `A` and samples what goes through it, capturing stacks with `St`.
///
/// ```ignore
/// #[global_allocator]
/// static HEAP: ProfiledAlloc<System, HostStack, 1024, 16384, 2048, 4096> =
///     ProfiledAlloc::new(System, HostStack, 512 * 1024, 42);
/// ```
///
/// Allocation: the inner allocator first, then the sampling countdown (recorded before
/// the pointer is returned). Free: the live map first, then the inner allocator (so
/// another thread cannot get the address back and record it before we forget it).
/// `realloc` is a free of the old block and an allocation of the new one.
///
/// Not sampled, an allocation adds a countdown subtract and branch, a free one filter
/// load that misses: on a Cortex-M3 (thumbv7m, opt-level `s`, LTO) 7 and 7
/// instructions over the inner allocator's, counted in QEMU by `cargo xtask device`,
/// which fails above 9 / 9. On x86_64 (`examples/fast_path.rs`, callgrind) 20
/// instructions per 16-byte alloc+free pair through the allocator shims, 12 with the
/// allocator inlined into the allocating loop.
///
/// `TOTALS = true` counts every call exactly ([`Profiler::heap`]): requested sizes, a
/// failed allocation not counted, a failed realloc leaving the old block counted.
pub struct ProfiledAlloc<
    A,
    St,
    const S: usize,
    const F: usize,
    const B: usize,
    const L: usize,
    const D: usize = 32,
    const TOTALS: bool = false,
> {
    inner: A,
    stack: St,
    profiler: Profiler<S, F, B, L, D, TOTALS>,
}

impl<
        A,
        St,
        const S: usize,
        const F: usize,
        const B: usize,
        const L: usize,
        const D: usize,
        const TOTALS: bool,
    > ProfiledAlloc<A, St, S, F, B, L, D, TOTALS>
{
    /// Wrap `inner`, sampling every `rate` bytes on average (0 = off, 1 = everything).
    pub const fn new(inner: A, stack: St, rate: usize, seed: u64) -> Self {
        ProfiledAlloc {
            inner,
            stack,
            profiler: Profiler::new(rate, seed),
        }
    }

    /// Wrap `inner` with a stopped, all-zero profiler (the `static` lands in .bss and
    /// costs no flash): call `profiler().start(rate, seed)` at boot.
    pub const fn off(inner: A, stack: St) -> Self {
        ProfiledAlloc {
            inner,
            stack,
            profiler: Profiler::off(),
        }
    }

    /// The profiler: cycles, counters, snapshots.
    pub const fn profiler(&self) -> &Profiler<S, F, B, L, D, TOTALS> {
        &self.profiler
    }

    /// The wrapped allocator.
    pub const fn inner(&self) -> &A {
        &self.inner
    }
}

impl<
        A: GlobalAlloc,
        St: StackSource,
        const S: usize,
        const F: usize,
        const B: usize,
        const L: usize,
        const D: usize,
        const TOTALS: bool,
    > ProfiledAlloc<A, St, S, F, B, L, D, TOTALS>
{
    /// Record a successful allocation; `p` back (the slow path's copy of it, so that
    /// nothing of the caller's is kept across that call).
    #[inline(always)]
    fn after_alloc(&self, p: *mut u8, size: usize) -> *mut u8 {
        if p.is_null() {
            return p;
        }
        // No stack boundary of our own here: this method is inlined into whatever
        // calls the allocator (`__rust_alloc`, or at opt-level 3 the allocating
        // function itself), so a local of "ours" can sit in the user's frame. The
        // recording function marks its own frame instead; see `record_alloc`.
        self.profiler
            .record_alloc_at(p, size, &self.stack)
            .1
            .cast_mut()
    }

    /// The free of an object the filter may track: the live map, then the inner free.
    ///
    /// Out of line with the inner free inside, so that `dealloc`'s fast path ends in
    /// the inner free as a tail call and keeps nothing across a call (on x86_64 the
    /// `__rust_dealloc` shim then saves no register and `jmp`s to `free`). The pointer
    /// and layout come first, in the registers the shim received them in.
    ///
    /// # Safety
    ///
    /// That of [`GlobalAlloc::dealloc`].
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_tracked(ptr: *mut u8, layout: Layout, this: &Self) {
        this.profiler.free_slow(ptr);
        unsafe { this.inner.dealloc(ptr, layout) }
    }
}

// SAFETY: every call is forwarded to `inner` with the caller's arguments; the profiler
// only observes the pointers.
unsafe impl<
        A: GlobalAlloc,
        St: StackSource,
        const S: usize,
        const F: usize,
        const B: usize,
        const L: usize,
        const D: usize,
        const TOTALS: bool,
    > GlobalAlloc for ProfiledAlloc<A, St, S, F, B, L, D, TOTALS>
{
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.inner.alloc(layout) };
        self.after_alloc(p, layout.size())
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        self.after_alloc(p, layout.size())
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.profiler.count_free(layout.size());
        if self.profiler.may_track(ptr) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { Self::dealloc_tracked(ptr, layout, self) };
        }
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Forget the old block before the inner allocator may hand its address to
        // another thread. If the realloc fails the old block stays allocated but
        // untracked: its eventual free is then just an unsampled free. The exact
        // totals count the free only when the realloc succeeded (the old block is
        // still in use otherwise).
        self.profiler.forget(ptr);
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            self.profiler.count_free(layout.size());
        }
        self.after_alloc(p, new_size)
    }
}
