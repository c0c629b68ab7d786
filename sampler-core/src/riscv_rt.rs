//! RISC-V integration (feature `riscv-rt`): the counterpart of [`crate::cortex_m`] for
//! firmware on `riscv-rt` (0.14 or later, whose `link.x` names the stack `__estack` ..
//! `_stack_start` and `.text` `__stext` .. `__etext`).
//!
//! * [`RtStack`]: the frame-pointer walker bounded by riscv-rt's `.stack` region, so a
//!   corrupt frame chain can never read outside it. With `-C force-frame-pointers=yes`
//!   every function keeps `s0` as its frame pointer and the psABI frame record below
//!   it: return address at `fp - XLEN/8`, the caller's `s0` at `fp - 2·XLEN/8`
//!   ([`crate::stack::FrameLayout::Below`]).
//! * [`SemihostingFile`] + [`SemihostingSink`]: snapshots into a file on the debug host
//!   (QEMU `-semihosting`, OpenOCD `arm semihosting enable`) through the RISC-V
//!   semihosting trap (riscv-semihosting's `syscall!`).
//! * [`build_id`] / [`firmware_mapping`]: the ELF's GNU build id in every snapshot, as in
//!   [`crate::cortex_m::build_id`] (the linker-script lines are the same, with
//!   `> REGION_RODATA` for riscv-rt's region names).
//!
//! Multi-hart firmware: the range is the whole `.stack` region (all harts' stacks), so
//! every hart's walk stays in bounds.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

pub use crate::firmware_id::{build_id, firmware_mapping};
pub use crate::semihosting::{SemihostingError, SemihostingFile, SemihostingSink};
use crate::{Captured, FramePointerStack, StackRange, StackSource};

extern "C" {
    /// Top of the stack region (hart 0's initial SP), from riscv-rt's `link.x`.
    static _stack_start: u32;
    /// Bottom of the stack region, from riscv-rt's `link.x` (0.14+; `_estack` before).
    static __estack: u32;
}

/// Frame-pointer stacks read only inside riscv-rt's stack region. Zero-sized: a
/// `ProfiledAlloc<_, RtStack, …>` static stays all-zero (in `.bss`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RtStack;

impl RtStack {
    /// The stack region as the linker placed it.
    pub fn range() -> StackRange {
        // Only the symbols' addresses are taken (safe), never their contents.
        StackRange::Fixed {
            lo: core::ptr::addr_of!(__estack) as usize,
            hi: core::ptr::addr_of!(_stack_start) as usize,
        }
    }
}

impl StackSource for RtStack {
    /// The walk, cut at the first return address outside the firmware's code. A return
    /// address follows a call, so it is above the first instruction: this drops the
    /// root record riscv-rt's `_start` leaves (it enters `_start_rust` with `s0` = the
    /// stack top and `ra` = `%hi(_abs_start)`, its own page: the start of `.text` when that
    /// is 4 KiB-aligned, as riscv-rt's memory layouts are),
    /// and any garbage a function without frame pointers leaves in the chain.
    #[inline]
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        let got = FramePointerStack::new(Self::range()).capture(boundary, out);
        let (lo, hi) = crate::firmware_id::code_range();
        let len = out
            .iter()
            .take(got.len)
            .position(|&ret| ret <= lo || ret > hi)
            .unwrap_or(got.len);
        Captured {
            len,
            truncated: got.truncated,
        }
    }
}
