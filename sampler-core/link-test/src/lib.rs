//! Shared by both binaries: a panic-free bump allocator (the "inner" heap), and the
//! panic handler that cannot link.
#![no_std]

// The single-core critical-section implementation (interrupts off) comes from here.
use cortex_m as _;

use core::alloc::{GlobalAlloc, Layout};

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};
use sampler_core::{Captured, FramePointerStack, StackRange, StackSource};

/// A 16 KiB bump allocator with no panic path (frees are ignored): the smallest
/// honest inner allocator, so the flash delta measured is the profiler's own.
pub struct Bump {
    heap: UnsafeCell<[u8; 16 * 1024]>,
    next: AtomicUsize,
}

// SAFETY: allocation hands out disjoint ranges via the atomic cursor.
unsafe impl Sync for Bump {}

impl Bump {
    pub const fn new() -> Self {
        Bump {
            heap: UnsafeCell::new([0; 16 * 1024]),
            next: AtomicUsize::new(0),
        }
    }
}

impl Default for Bump {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.heap.get() as usize;
        let len = 16 * 1024;
        let align = layout.align();
        let cur = self.next.load(Ordering::Relaxed);
        let start = (base + cur + align - 1) & !(align - 1);
        let end = start - base + layout.size();
        if end > len {
            return core::ptr::null_mut();
        }
        self.next.store(end, Ordering::Relaxed);
        start as *mut u8
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

/// Frame-pointer stacks bounded by the stack region cortex-m-rt's linker script
/// defines (`_stack_end` .. `_stack_start`): a zero-sized source, so a profiler
/// `static` holding it stays all-zero (.bss, no flash image).
pub struct McuStack;

impl StackSource for McuStack {
    #[inline(always)]
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        extern "C" {
            static _stack_start: u32;
            static _stack_end: u32;
        }
        // Only the symbols' addresses are taken, never their contents.
        let (lo, hi) = (
            core::ptr::addr_of!(_stack_end) as usize,
            core::ptr::addr_of!(_stack_start) as usize,
        );
        FramePointerStack::new(StackRange::Fixed { lo, hi }).capture(boundary, out)
    }
}

/// Any panic that survives LTO references this symbol, which nothing defines: the
/// build fails at link time with its name in the error.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    extern "Rust" {
        fn heapsnap_link_test_found_a_reachable_panic() -> !;
    }
    // SAFETY: never defined; reaching the linker with this call is the failure.
    unsafe { heapsnap_link_test_found_a_reachable_panic() }
}
