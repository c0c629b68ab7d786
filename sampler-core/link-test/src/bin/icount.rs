//! What `ProfiledAlloc` adds to an allocation that is not sampled and to the free of an
//! object that was not, in instructions really executed: built for thumbv7m and run on
//! QEMU's Cortex-M3 (`lm3s6965evb`) one instruction per translation block with the
//! executed-PC log on, by `cargo xtask device` (`xtask/src/sampler.rs`), which counts
//! the log lines between each [`heapsnap_icount_begin`] and the next
//! [`heapsnap_icount_end`].
//!
//! The measured segments, in this order (the xtask expects exactly these):
//! 1. an empty one (the marker calls alone);
//! 2. [`ITERS`] times: a 16-byte allocation through `ProfiledAlloc<Bump>` at a 512 KiB
//!    rate, its free, then the same allocation and free on a bare `Bump`;
//! 3. at rate 1: one sampled allocation (stack walk, interning) and its free.
//!
//! Each operation goes through an out-of-line function, the shape of the
//! `__rust_alloc` / `__rust_dealloc` shims with the allocator inlined into them. The
//! program checks the sample counts it expects (none at 512 KiB, one at rate 1) and
//! leaves QEMU with a failing status otherwise. Built for thumbv7em with the other
//! bins too, so its paths are also proven panic-free.
#![no_std]
#![no_main]

use core::alloc::{GlobalAlloc, Layout};
use core::hint::black_box;

use cortex_m_rt::entry;
use sampler_core::ProfiledAlloc;
use sampler_link_test::{Bump, McuStack};

/// Allocation/free pairs measured on each allocator (the xtask checks they agree).
pub const ITERS: usize = 8;

/// The `profiled` bin's configuration.
static PROFILED: ProfiledAlloc<Bump, McuStack, 64, 1024, 128, 128, 16> =
    ProfiledAlloc::off(Bump::new(), McuStack);

/// The inner allocator alone: the baseline each operation is compared with.
static INNER: Bump = Bump::new();

/// Starts a measured segment (the xtask finds it by name).
#[no_mangle]
#[inline(never)]
pub extern "C" fn heapsnap_icount_begin() {
    // Distinct bodies, so the linker cannot fold the two markers into one address.
    black_box(1u32);
}

/// Ends a measured segment.
#[no_mangle]
#[inline(never)]
pub extern "C" fn heapsnap_icount_end() {
    black_box(2u32);
}

/// An empty `asm!` (no instructions, but a side effect to the compiler): the wrapper
/// calls stay even when the inner operation does nothing (`Bump`'s free), as the
/// allocator shims' calls would.
#[inline(always)]
fn keep() {
    // SAFETY: no instructions.
    unsafe { core::arch::asm!("", options(nomem, nostack, preserves_flags)) }
}

#[inline(never)]
fn profiled_alloc(layout: Layout) -> *mut u8 {
    // SAFETY: a non-zero-sized layout.
    let r = unsafe { PROFILED.alloc(layout) };
    keep();
    r
}

#[inline(never)]
fn profiled_free(p: *mut u8, layout: Layout) {
    // SAFETY: `p` came from `PROFILED.alloc(layout)`.
    unsafe { PROFILED.dealloc(p, layout) };
    keep();
}

#[inline(never)]
fn inner_alloc(layout: Layout) -> *mut u8 {
    // SAFETY: a non-zero-sized layout.
    let r = unsafe { INNER.alloc(layout) };
    keep();
    r
}

#[inline(never)]
fn inner_free(p: *mut u8, layout: Layout) {
    // SAFETY: `p` came from `INNER.alloc(layout)`.
    unsafe { INNER.dealloc(p, layout) };
    keep();
}

/// Semihosting SYS_EXIT: ApplicationExit (QEMU exits 0) or InternalError (QEMU exits 1).
fn exit(ok: bool) -> ! {
    let reason: u32 = if ok { 0x2_0026 } else { 0x2_0024 };
    // SAFETY: the semihosting trap; QEMU (`-semihosting-config enable=on`) handles it.
    #[cfg(target_arch = "arm")]
    unsafe {
        core::arch::asm!("bkpt 0xab", in("r0") 0x18u32, in("r1") reason, options(nostack));
    }
    #[allow(clippy::empty_loop)]
    loop {}
}

#[entry]
fn main() -> ! {
    let layout = black_box(Layout::new::<[u32; 4]>());
    PROFILED.profiler().start(512 * 1024, 0x1234);

    heapsnap_icount_begin();
    heapsnap_icount_end();

    for _ in 0..ITERS {
        heapsnap_icount_begin();
        let p = black_box(profiled_alloc(layout));
        heapsnap_icount_end();
        heapsnap_icount_begin();
        profiled_free(p, layout);
        heapsnap_icount_end();

        heapsnap_icount_begin();
        let q = black_box(inner_alloc(layout));
        heapsnap_icount_end();
        heapsnap_icount_begin();
        inner_free(q, layout);
        heapsnap_icount_end();
        if p.is_null() || q.is_null() {
            exit(false);
        }
    }
    // The 512 KiB countdown starts at the full rate: none of these may have been sampled.
    if PROFILED.profiler().counters().samples != 0 {
        exit(false);
    }

    PROFILED.profiler().start(1, 0x1234);
    heapsnap_icount_begin();
    let p = black_box(profiled_alloc(layout));
    heapsnap_icount_end();
    heapsnap_icount_begin();
    profiled_free(p, layout);
    heapsnap_icount_end();
    let c = PROFILED.profiler().counters();
    exit(!p.is_null() && c.samples == 1 && c.unknown_frees == 0)
}
