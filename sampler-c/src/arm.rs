//! Armv7-M (Thumb-2, bare metal): the recording entry points as register-saving
//! trampolines, the `--wrap` hooks of newlib's allocator, and the EHABI stack source.
//!
//! Each trampoline pushes `r3`–`r11` and `lr` (40 bytes: the stack stays 8-byte
//! aligned), passes the block's address as the last argument to the Rust function and
//! returns what it returns. At that point `r4`–`r11` and `sp` are the C caller's at the
//! call and `lr` the return address into it: the exact start of an EHABI unwind, with
//! no frame of the profiler's own to skip and no unwind tables needed for Rust code.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use sampler_core::{Captured, StackSource};

use crate::ehabi::{self, Exidx, Start};
use crate::{heapsnap_record_free, record_alloc_with, record_realloc_with, STACK_HI, STACK_LO};

extern "C" {
    /// The unwind index table, from the linker script (GNU ld's default scripts and the
    /// usual vendor ones define both around `.ARM.exidx`).
    static __exidx_start: u32;
    static __exidx_end: u32;
}

/// What a trampoline pushed, lowest address first.
#[repr(C)]
pub struct Saved {
    _r3: u32,
    r4_r11: [u32; 8],
    lr: u32,
}

/// The EHABI walk from a trampoline's saved registers.
struct Ehabi<'a>(&'a Saved);

impl StackSource for Ehabi<'_> {
    fn capture(&self, _boundary: usize, out: &mut [usize]) -> Captured {
        let saved = self.0;
        let start = Start {
            r4_r11: saved.r4_r11,
            // The caller's sp: just above the 40 pushed bytes.
            sp: (saved as *const Saved as u32).wrapping_add(40),
            lr: saved.lr,
        };
        let tab = Exidx {
            start: core::ptr::addr_of!(__exidx_start) as u32,
            end: core::ptr::addr_of!(__exidx_end) as u32,
        };
        let range = (STACK_LO.load(Relaxed) as u32, STACK_HI.load(Relaxed) as u32);
        // SAFETY: the walker reads the index table (linker-placed, in flash), the extab
        // words its entries point to, and stack words it has checked to lie in the range
        // `heapsnap_init` was given, 4-byte aligned.
        ehabi::walk(&start, tab, range, out, |a| {
            Some(unsafe { core::ptr::read_volatile(a as *const u32) })
        })
    }
}

/// A register-saving entry point `$name` calling `$target` with the saved block in
/// register `$reg` (the argument after the entry point's own).
macro_rules! trampoline {
    ($name:literal, $target:literal, $reg:literal) => {
        core::arch::global_asm!(
            concat!(".section .text.", $name, ",\"ax\",%progbits"),
            ".syntax unified",
            ".thumb",
            ".p2align 1",
            concat!(".global ", $name),
            concat!(".type ", $name, ",%function"),
            ".thumb_func",
            concat!($name, ":"),
            "push {{r3-r11, lr}}",
            concat!("mov ", $reg, ", sp"),
            concat!("bl ", $target),
            "pop {{r3-r11, pc}}",
            concat!(".size ", $name, ", . - ", $name),
            ".text",
        );
    };
}

trampoline!("heapsnap_record_alloc", "heapsnap_arm_record_alloc", "r2");
trampoline!(
    "heapsnap_record_realloc",
    "heapsnap_arm_record_realloc",
    "r3"
);
trampoline!("__wrap_malloc", "heapsnap_arm_malloc", "r1");
trampoline!("__wrap_calloc", "heapsnap_arm_calloc", "r2");
trampoline!("__wrap_realloc", "heapsnap_arm_realloc", "r2");
trampoline!("__wrap__malloc_r", "heapsnap_arm_malloc_r", "r2");
trampoline!("__wrap__calloc_r", "heapsnap_arm_calloc_r", "r3");
trampoline!("__wrap__realloc_r", "heapsnap_arm_realloc_r", "r3");

extern "C" {
    // The allocator's own functions: `-Wl,--wrap=malloc` points these at them.
    fn __real_malloc(size: usize) -> *mut c_void;
    fn __real_calloc(n: usize, size: usize) -> *mut c_void;
    fn __real_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn __real_free(ptr: *mut c_void);
    fn __real__malloc_r(r: *mut c_void, size: usize) -> *mut c_void;
    fn __real__calloc_r(r: *mut c_void, n: usize, size: usize) -> *mut c_void;
    fn __real__realloc_r(r: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void;
    fn __real__free_r(r: *mut c_void, ptr: *mut c_void);
}

/// Allocator calls in progress through the `--wrap` hooks. newlib's `malloc` calls
/// `_malloc_r`, `_calloc_r` and `_realloc_r` call `_malloc_r` and `_free_r`, and under
/// `--wrap` those inner calls come back through the hooks: only the outermost call of a
/// nest is recorded, so wrapping both the plain and the `_r` names records each
/// allocation once. (An interrupt that allocates while the main code is inside the C
/// library's allocator is not recorded either; newlib's allocator is not interrupt-safe
/// without its `__malloc_lock` anyway.)
static NESTED: AtomicU32 = AtomicU32::new(0);

/// Run the allocator call `f` and say whether it was the outermost one.
#[inline(always)]
fn through<R>(f: impl FnOnce() -> R) -> (R, bool) {
    let outer = enter();
    let r = f();
    leave();
    (r, outer)
}

// Out of line: each atomic is an exclusive load/store loop, in eight hooks.
#[inline(never)]
fn enter() -> bool {
    NESTED.fetch_add(1, Relaxed) == 0
}

#[inline(never)]
fn leave() {
    NESTED.fetch_sub(1, Relaxed);
}

/// After an allocator call returned `p` for `size` bytes: recorded with the caller's
/// stack if the call was the outermost one. One out-of-line copy of the recording path
/// for every hook (inlined into each, it cost 0.5 KB of flash more).
#[inline(never)]
fn after_alloc(outer: bool, p: *mut c_void, size: usize, saved: &Saved) -> *mut c_void {
    if outer {
        record_alloc_with(p, size, &Ehabi(saved));
    }
    p
}

/// As [`after_alloc`] for a realloc of `old` that returned `p`.
#[inline(never)]
fn after_realloc(
    outer: bool,
    old: *const c_void,
    p: *mut c_void,
    size: usize,
    saved: &Saved,
) -> *mut c_void {
    if outer {
        record_realloc_with(old, p, size, &Ehabi(saved));
    }
    p
}

#[no_mangle]
extern "C" fn heapsnap_arm_record_alloc(ptr: *const c_void, size: usize, saved: &Saved) {
    after_alloc(true, ptr.cast_mut(), size, saved);
}

#[no_mangle]
extern "C" fn heapsnap_arm_record_realloc(
    old: *const c_void,
    new: *const c_void,
    size: usize,
    saved: &Saved,
) {
    after_realloc(true, old, new.cast_mut(), size, saved);
}

#[no_mangle]
unsafe extern "C" fn heapsnap_arm_malloc(size: usize, saved: &Saved) -> *mut c_void {
    // SAFETY: the C library's malloc, as the caller called it.
    let (p, outer) = through(|| unsafe { __real_malloc(size) });
    after_alloc(outer, p, size, saved)
}

#[no_mangle]
unsafe extern "C" fn heapsnap_arm_calloc(n: usize, size: usize, saved: &Saved) -> *mut c_void {
    // SAFETY: as the caller called it.
    let (p, outer) = through(|| unsafe { __real_calloc(n, size) });
    after_alloc(outer, p, n.saturating_mul(size), saved)
}

#[no_mangle]
unsafe extern "C" fn heapsnap_arm_realloc(
    old: *mut c_void,
    size: usize,
    saved: &Saved,
) -> *mut c_void {
    // SAFETY: as the caller called it.
    let (p, outer) = through(|| unsafe { __real_realloc(old, size) });
    after_realloc(outer, old, p, size, saved)
}

#[no_mangle]
unsafe extern "C" fn heapsnap_arm_malloc_r(
    r: *mut c_void,
    size: usize,
    saved: &Saved,
) -> *mut c_void {
    // SAFETY: as the caller called it.
    let (p, outer) = through(|| unsafe { __real__malloc_r(r, size) });
    after_alloc(outer, p, size, saved)
}

#[no_mangle]
unsafe extern "C" fn heapsnap_arm_calloc_r(
    r: *mut c_void,
    n: usize,
    size: usize,
    saved: &Saved,
) -> *mut c_void {
    // SAFETY: as the caller called it.
    let (p, outer) = through(|| unsafe { __real__calloc_r(r, n, size) });
    after_alloc(outer, p, n.saturating_mul(size), saved)
}

#[no_mangle]
unsafe extern "C" fn heapsnap_arm_realloc_r(
    r: *mut c_void,
    old: *mut c_void,
    size: usize,
    saved: &Saved,
) -> *mut c_void {
    // SAFETY: as the caller called it.
    let (p, outer) = through(|| unsafe { __real__realloc_r(r, old, size) });
    after_realloc(outer, old, p, size, saved)
}

/// `free` under `-Wl,--wrap=free`: forget the object, then free it.
#[no_mangle]
unsafe extern "C" fn __wrap_free(ptr: *mut c_void) {
    if NESTED.load(Relaxed) == 0 {
        heapsnap_record_free(ptr);
    }
    // SAFETY: as the caller called it.
    through(|| unsafe { __real_free(ptr) });
}

/// `_free_r` under `-Wl,--wrap=_free_r` (newlib's reentrant free).
#[no_mangle]
unsafe extern "C" fn __wrap__free_r(r: *mut c_void, ptr: *mut c_void) {
    if NESTED.load(Relaxed) == 0 {
        heapsnap_record_free(ptr);
    }
    // SAFETY: as the caller called it.
    through(|| unsafe { __real__free_r(r, ptr) });
}
