//! The C API of heapsnap's sampler: one static profiler, its entry points, and the
//! `--wrap` hooks that profile every `malloc` of a newlib firmware without touching its
//! code. The header is `include/heapsnap.h`, generated from this file by cbindgen
//! (`tests/header.rs` fails when it is stale).
//!
//! No `alloc`, no panic reachable from any entry point (the C firmware's build links
//! with a panic handler that cannot link, feature `panic-link-check`), and the same
//! locking as in Rust: a critical section (interrupts off on a single-core MCU) around
//! the tables, re-entry (an interrupt allocating while the profiler records) counted
//! and dropped, never recursed into.
//!
//! Stacks: on Armv7-M (Thumb-2, bare metal) the recording entry points save the
//! caller's registers and unwind GCC's C code with its EHABI tables ([`ehabi`]); on
//! other targets they record no stack unless the caller gives one
//! ([`heapsnap_record_alloc_stack`]).
#![cfg_attr(target_os = "none", no_std)]
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

pub mod ehabi;

// Links the single-core critical section (interrupts off) into the library.
#[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
use cortex_m as _;

use core::ffi::c_void;

use sampler_core::snapshot::{encode_framed_stream, encode_stream, EncodeError, FnSink};
use sampler_core::{Counters, Profiler, SnapshotError, StackSource};

/// Interned stacks the profiler holds (fixed at build time, as every capacity here).
pub const HEAPSNAP_STACKS: usize = 64;
/// Return addresses in the frame arena shared by all stacks.
pub const HEAPSNAP_FRAMES: usize = 1024;
/// (stack, size) buckets.
pub const HEAPSNAP_BUCKETS: usize = 128;
/// Sampled objects tracked until freed.
pub const HEAPSNAP_LIVE: usize = 128;
/// Frames per stack (deeper stacks are cut and counted in `truncated_stacks`).
pub const HEAPSNAP_DEPTH: usize = 24;
/// Bytes of RAM the profiler's tables take on a 32-bit target, from the formula
/// 12·STACKS + 4·FRAMES + 40·BUCKETS + 16·LIVE (plus a few words of state).
pub const HEAPSNAP_TABLE_BYTES: usize =
    12 * HEAPSNAP_STACKS + 4 * HEAPSNAP_FRAMES + 40 * HEAPSNAP_BUCKETS + 16 * HEAPSNAP_LIVE;

type CProfiler = Profiler<
    HEAPSNAP_STACKS,
    HEAPSNAP_FRAMES,
    HEAPSNAP_BUCKETS,
    HEAPSNAP_LIVE,
    HEAPSNAP_DEPTH,
    false,
>;

/// The one profiler: all zero (in `.bss`, no flash) until [`heapsnap_init`].
static PROFILER: CProfiler = CProfiler::off();

/// Where stack walks may read, set by [`heapsnap_init`]: `[lo, hi)`.
static STACK_LO: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
static STACK_HI: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// What a call returned.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapsnapStatus {
    /// Done.
    Ok = 0,
    /// Called from inside the profiler (an interrupt or a write callback that called
    /// back in); counted in `reentrant`, nothing done.
    Reentered = 1,
    /// The buffer is too small: the needed size was stored.
    BufferTooSmall = 2,
    /// The write callback returned non-zero; the snapshot is incomplete.
    WriteFailed = 3,
    /// A required pointer was NULL.
    NullArgument = 4,
    /// The encoder failed otherwise (the tables changed while encoding: a bug).
    EncodeFailed = 5,
}

/// The profiler's counters, in the snapshot's wire order (`docs/snapshot-format.md`
/// §2.1 says what each one counts). Nothing is dropped silently: every sample the
/// tables could not hold is in one of them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapsnapCounters {
    /// Allocations that were sampled.
    pub samples: u64,
    /// Samples dropped: the stack table was full.
    pub stack_table_full: u64,
    /// Samples dropped: the bucket table was full.
    pub bucket_table_full: u64,
    /// Sampled objects not tracked: the live map was full.
    pub live_map_full: u64,
    /// Calls that found the profiler busy (re-entered from an interrupt or a callback).
    pub reentrant: u64,
    /// Frees of sampled-looking addresses the live map did not know.
    pub unknown_frees: u64,
    /// Stacks cut at `HEAPSNAP_DEPTH` frames.
    pub truncated_stacks: u64,
    /// 1 when exact heap totals were counted (never in this build: `free` does not know
    /// the size), then the four `heap_*` fields are exact.
    pub heap_totals: u64,
    /// Allocations, every call (0 here: see `heap_totals`).
    pub heap_allocs: u64,
    /// Frees, every call.
    pub heap_frees: u64,
    /// Bytes in use.
    pub heap_in_use_bytes: u64,
    /// Peak of `heap_in_use_bytes`.
    pub heap_peak_bytes: u64,
    /// The ELF machine number of the code that wrote the snapshot (40 Arm, 243
    /// RISC-V; 0 unknown): heapsnap refuses an `--elf` of another architecture.
    pub elf_machine: u64,
}

impl From<Counters> for HeapsnapCounters {
    fn from(c: Counters) -> Self {
        // Destructured from the wire-order array: a counter added to sampler-core does
        // not compile here until this struct (and so the header) has it.
        let [samples, stack_table_full, bucket_table_full, live_map_full, reentrant, unknown_frees, truncated_stacks, heap_totals, heap_allocs, heap_frees, heap_in_use_bytes, heap_peak_bytes, elf_machine] =
            c.to_array();
        HeapsnapCounters {
            samples,
            stack_table_full,
            bucket_table_full,
            live_map_full,
            reentrant,
            unknown_frees,
            truncated_stacks,
            heap_totals,
            heap_allocs,
            heap_frees,
            heap_in_use_bytes,
            heap_peak_bytes,
            elf_machine,
        }
    }
}

/// A snapshot write callback: send `len` bytes at `bytes` (a UART, semihosting, a
/// flash page). Returns 0 on success, anything else stops the snapshot.
pub type HeapsnapWriteFn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, bytes: *const u8, len: usize) -> i32>;

/// Start (or restart) profiling: sample on average every `rate` bytes (1 = every
/// allocation, 0 = off) with random intervals seeded by `seed`; stack walks read only
/// `[stack_lo, stack_hi)` (the main stack between its linker symbols, or all of RAM
/// under an RTOS whose tasks have their own stacks; `0, 0`: no stacks). Returns false
/// when called from inside the profiler.
#[no_mangle]
pub extern "C" fn heapsnap_init(rate: usize, seed: u64, stack_lo: usize, stack_hi: usize) -> bool {
    #[cfg(feature = "inject-panic")]
    #[allow(clippy::panic)]
    if core::hint::black_box(rate) == usize::MAX {
        panic!("injected");
    }
    STACK_LO.store(stack_lo, core::sync::atomic::Ordering::Relaxed);
    STACK_HI.store(stack_hi, core::sync::atomic::Ordering::Relaxed);
    PROFILER.start(rate, seed)
}

/// Record the free of `ptr` (NULL is ignored). Cheap unless `ptr` may be sampled.
#[no_mangle]
pub extern "C" fn heapsnap_record_free(ptr: *const c_void) {
    if !ptr.is_null() {
        PROFILER.record_free(ptr.cast(), 0);
    }
}

/// Record an allocation of `size` bytes at `ptr` with the caller's stack given as
/// `n` return addresses at `frames`, innermost first (for code that has its own
/// unwinder, or targets without one here). NULL `ptr` is ignored.
///
/// # Safety
/// `frames` points to `n` readable words (or `n` is 0).
#[no_mangle]
pub unsafe extern "C" fn heapsnap_record_alloc_stack(
    ptr: *const c_void,
    size: usize,
    frames: *const usize,
    n: usize,
) {
    if ptr.is_null() {
        return;
    }
    let frames: &[usize] = if frames.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: the caller promises `n` readable words at `frames`.
        unsafe { core::slice::from_raw_parts(frames, n) }
    };
    PROFILER.record_alloc(ptr.cast(), size, frames);
}

/// Close the current record cycle (Go's rule: a snapshot shows the heap as of the last
/// completed cycle, not a half-finished one). Call it where the heap means something:
/// the end of a main-loop turn. O(BUCKETS) with interrupts off. False when re-entered.
#[no_mangle]
pub extern "C" fn heapsnap_advance_cycle() -> bool {
    PROFILER.advance_cycle()
}

/// Copy the counters into `*out`. False (and `*out` untouched) if `out` is NULL.
///
/// # Safety
/// `out` is NULL or points to a writable `HeapsnapCounters`.
#[no_mangle]
pub unsafe extern "C" fn heapsnap_counters(out: *mut HeapsnapCounters) -> bool {
    if out.is_null() {
        return false;
    }
    // The wire-order array written as it is: `HeapsnapCounters` is `repr(C)`, one `u64`
    // per counter in that order (`From<Counters>` names them; the host test
    // `counters_struct_is_the_wire_order_array` checks the layout). Field by field,
    // the copy took 0.1 KB more flash.
    const _: () = assert!(
        core::mem::size_of::<HeapsnapCounters>() == core::mem::size_of::<[u64; Counters::LEN]>()
    );
    // SAFETY: non-null, the caller promises it is writable, and the struct is the array.
    unsafe {
        out.cast::<[u64; Counters::LEN]>()
            .write(PROFILER.counters().to_array())
    };
    true
}

/// Most bytes a snapshot of this build's capacities can take: a buffer this large never
/// gets `BUFFER_TOO_SMALL`.
#[no_mangle]
pub extern "C" fn heapsnap_max_snapshot_len() -> usize {
    CProfiler::MAX_SNAPSHOT_LEN
}

/// Write a snapshot into `buf` (`cap` bytes). On `OK`, `*len` is the snapshot's size;
/// on `BUFFER_TOO_SMALL`, `*len` is the size it needs (the tables as they are now).
///
/// # Safety
/// `buf` points to `cap` writable bytes (or `cap` is 0); `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn heapsnap_write_snapshot(
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> HeapsnapStatus {
    // SAFETY: as promised by our caller.
    unsafe { to_buffer(buf, cap, len, write_plain) }
}

/// As `heapsnap_write_snapshot`, COBS-framed (ending in a 0 byte) for serial links:
/// `heapsnap pull`/`convert` find snapshots in a raw capture by their frames. A separate
/// entry point so that a firmware using one format links one encoder.
///
/// # Safety
/// `buf` points to `cap` writable bytes (or `cap` is 0); `len` is writable.
#[no_mangle]
pub unsafe extern "C" fn heapsnap_write_snapshot_framed(
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> HeapsnapStatus {
    // SAFETY: as promised by our caller.
    unsafe { to_buffer(buf, cap, len, write_framed) }
}

/// A snapshot through `write` into `buf`, its size (or the size needed) into `*len`.
///
/// # Safety
/// As `heapsnap_write_snapshot`.
#[inline(always)]
unsafe fn to_buffer(buf: *mut u8, cap: usize, len: *mut usize, write: Writer) -> HeapsnapStatus {
    if len.is_null() || (buf.is_null() && cap != 0) {
        return HeapsnapStatus::NullArgument;
    }
    let buf: &mut [u8] = if cap == 0 {
        &mut []
    } else {
        // SAFETY: the caller promises `cap` writable bytes at `buf`.
        unsafe { core::slice::from_raw_parts_mut(buf, cap) }
    };
    let (mut at, mut full) = (0usize, false);
    let r = write(&mut |bytes: &[u8]| {
        let end = at.checked_add(bytes.len());
        match end.and_then(|end| Some((end, buf.get_mut(at..end)?))) {
            Some((end, dst)) => {
                // Not `copy_from_slice`: its length check is a panic path LLVM keeps at
                // opt-level "z" (`dst` is as long as `bytes` by construction).
                dst.iter_mut().zip(bytes).for_each(|(d, s)| *d = *s);
                at = end;
                Ok(())
            }
            None => {
                full = true;
                Err(())
            }
        }
    });
    let (status, n) = match r {
        Ok(()) => (HeapsnapStatus::Ok, at),
        // The buffer ran out (the writer reports any refused write as a failed sink):
        // a second pass counts what it needs.
        Err(SnapshotError::Encode(EncodeError::SinkFailed)) if full => {
            let mut needed = 0usize;
            match write(&mut |bytes: &[u8]| {
                needed = needed.saturating_add(bytes.len());
                Ok(())
            }) {
                Ok(()) => (HeapsnapStatus::BufferTooSmall, needed),
                Err(e) => (status_of(&e), 0),
            }
        }
        Err(e) => (status_of(&e), 0),
    };
    // SAFETY: non-null, and the caller promises it is writable.
    unsafe { len.write(n) };
    status
}

/// Stream a snapshot through `write(ctx, bytes, len)`, in chunks, without a buffer for
/// the whole snapshot. Runs with the profiler locked (interrupts off on an MCU): an
/// allocation from `write` is counted as re-entrant, not recorded.
///
/// # Safety
/// `write` is safe to call with `ctx` and a readable chunk.
#[no_mangle]
pub unsafe extern "C" fn heapsnap_write_snapshot_with(
    write: HeapsnapWriteFn,
    ctx: *mut c_void,
) -> HeapsnapStatus {
    // SAFETY: as promised by our caller.
    unsafe { to_callback(write, ctx, write_plain) }
}

/// As `heapsnap_write_snapshot_with`, COBS-framed (ending in a 0 byte).
///
/// # Safety
/// `write` is safe to call with `ctx` and a readable chunk.
#[no_mangle]
pub unsafe extern "C" fn heapsnap_write_snapshot_framed_with(
    write: HeapsnapWriteFn,
    ctx: *mut c_void,
) -> HeapsnapStatus {
    // SAFETY: as promised by our caller.
    unsafe { to_callback(write, ctx, write_framed) }
}

/// A snapshot through `write` into the C callback `send`.
///
/// # Safety
/// As `heapsnap_write_snapshot_with`.
#[inline(always)]
unsafe fn to_callback(send: HeapsnapWriteFn, ctx: *mut c_void, write: Writer) -> HeapsnapStatus {
    let Some(send) = send else {
        return HeapsnapStatus::NullArgument;
    };
    // A refused chunk comes back as `SinkFailed` (`WRITE_FAILED`).
    let r = write(&mut |bytes: &[u8]| {
        // SAFETY: the caller promises `write` takes `ctx` and a readable chunk.
        match unsafe { send(ctx, bytes.as_ptr(), bytes.len()) } {
            0 => Ok(()),
            _ => Err(()),
        }
    });
    match r {
        Ok(()) => HeapsnapStatus::Ok,
        Err(e) => status_of(&e),
    }
}

/// Where the encoder's chunks go: every output is a `dyn` chunk sink, so the encoder is
/// compiled once per format (plain, framed), not once per kind of output.
type Chunks<'a> = &'a mut dyn FnMut(&[u8]) -> Result<(), ()>;
/// One of the two encoders.
type Writer = fn(Chunks<'_>) -> Result<(), SnapshotError>;

// The streaming encoders: a refused chunk is `SinkFailed`, and `to_buffer` counts the
// size a too-small buffer needs itself, so the encoder's own counting pass is not linked.
fn write_plain(sink: Chunks<'_>) -> Result<(), SnapshotError> {
    PROFILER
        .with_view(&[], |v| encode_stream(v, FnSink::new(sink)))?
        .map_err(SnapshotError::Encode)
}

fn write_framed(sink: Chunks<'_>) -> Result<(), SnapshotError> {
    PROFILER
        .with_view(&[], |v| encode_framed_stream(v, FnSink::new(sink)))?
        .map_err(SnapshotError::Encode)
}

fn status_of(e: &SnapshotError) -> HeapsnapStatus {
    match e {
        SnapshotError::Reentered => HeapsnapStatus::Reentered,
        SnapshotError::Encode(EncodeError::SinkFull { .. }) => HeapsnapStatus::BufferTooSmall,
        SnapshotError::Encode(EncodeError::SinkFailed) => HeapsnapStatus::WriteFailed,
        SnapshotError::Encode(_) => HeapsnapStatus::EncodeFailed,
    }
}

/// Record an allocation with the stack the target's built-in source gives.
#[inline(always)]
fn record_alloc_with<St: StackSource + ?Sized>(ptr: *const c_void, size: usize, stack: &St) {
    if !ptr.is_null() {
        PROFILER.record_alloc(ptr.cast(), size, stack);
    }
}

/// A realloc that moved or resized `old` to `new`: the old object is freed, the new one
/// allocated. NULL `new` with `size` 0: `old` was freed (newlib and glibc free it and
/// return NULL); NULL `new` otherwise: the realloc failed, `old` is still live.
#[inline(always)]
fn record_realloc_with<St: StackSource + ?Sized>(
    old: *const c_void,
    new: *const c_void,
    size: usize,
    stack: &St,
) {
    if new.is_null() {
        if size == 0 {
            heapsnap_record_free(old);
        }
        return;
    }
    heapsnap_record_free(old);
    record_alloc_with(new, size, stack);
}

#[cfg(not(heapsnap_ehabi))]
mod entry {
    //! Targets without the EHABI walker: the recording entry points record no stack.
    use super::*;
    use sampler_core::NoStack;

    /// Record an allocation of `size` bytes at `ptr`, with the caller's stack where
    /// this target can walk it (Armv7-M: from the EHABI tables; elsewhere none: use
    /// `heapsnap_record_alloc_stack`). NULL `ptr` is ignored.
    #[no_mangle]
    pub extern "C" fn heapsnap_record_alloc(ptr: *const c_void, size: usize) {
        record_alloc_with(ptr, size, &NoStack);
    }

    /// Record `realloc(old, size)` that returned `new_ptr`. NULL `old`: a plain
    /// allocation; NULL `new_ptr` with `size` 0: `old` was freed (as newlib and glibc
    /// do); NULL `new_ptr` otherwise: the realloc failed, nothing is recorded.
    #[no_mangle]
    pub extern "C" fn heapsnap_record_realloc(
        old: *const c_void,
        new_ptr: *const c_void,
        size: usize,
    ) {
        record_realloc_with(old, new_ptr, size, &NoStack);
    }
}

/// cbindgen:ignore
#[cfg(heapsnap_ehabi)]
mod arm;

#[cfg(all(target_os = "none", not(feature = "panic-link-check")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[cfg(all(target_os = "none", feature = "panic-link-check"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    extern "C" {
        /// Never defined: a firmware link that keeps a panic path fails with this name.
        fn heapsnap_c_found_a_reachable_panic() -> !;
    }
    // SAFETY: never linked; reaching here is a link error, the point of the feature.
    unsafe { heapsnap_c_found_a_reachable_panic() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `heapsnap_counters` writes the wire-order array over the struct: each field must
    /// sit at its counter's index (the struct's field order is the header's).
    #[test]
    fn counters_struct_is_the_wire_order_array() {
        let wire: [u64; Counters::LEN] = core::array::from_fn(|i| i as u64 + 1);
        let named = HeapsnapCounters::from(Counters::from_array(wire));
        // SAFETY: `repr(C)`, `Counters::LEN` `u64` fields (the const assert above).
        let as_array: [u64; Counters::LEN] = unsafe { core::mem::transmute(named) };
        assert_eq!(as_array, wire);
    }
}
