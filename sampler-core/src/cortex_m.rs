//! Cortex-M integration (feature `cortex-m`): what every Cortex-M firmware on
//! `cortex-m-rt` would otherwise write by hand.
//!
//! * [`RtStack`]: the frame-pointer walker bounded by cortex-m-rt's own stack symbols
//!   (`_stack_end` .. `_stack_start`), so a corrupt frame chain can never read outside
//!   the stack, with no address typed into the firmware.
//! * [`SemihostingFile`] + [`SemihostingSink`]: snapshots written straight into a file
//!   on the debug host (QEMU, OpenOCD, probe-rs with semihosting on) through ARM
//!   semihosting's SYS_OPEN / SYS_WRITE / SYS_CLOSE — cortex-m-semihosting 0.6 exposes
//!   no public `open`, so this is the ~60 lines a user would otherwise copy.
//!
//! * [`build_id`] / [`firmware_mapping`]: the ELF's GNU build id, read from flash, in
//!   every snapshot, so `heapsnap` refuses an `--elf` of another build instead of
//!   symbolizing into garbage. Needs the linker-script lines of [`build_id`].
//!
//! Needs the firmware to be linked with cortex-m-rt's `link.x` (which defines the stack
//! symbols) and to be built with `-C force-frame-pointers=yes` (r7 chains on Thumb).
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
    /// Top of the main stack (initial SP), from cortex-m-rt's `link.x`.
    static _stack_start: u32;
    /// Lowest address the stack may grow to, from cortex-m-rt's `link.x` (0.7.4+).
    static _stack_end: u32;
}

/// Frame-pointer stacks read only inside the cortex-m-rt stack region. Zero-sized: a
/// `ProfiledAlloc<_, RtStack, …>` static stays all-zero (in `.bss`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RtStack;

impl RtStack {
    /// The stack region as the linker placed it.
    pub fn range() -> StackRange {
        // Only the symbols' addresses are taken (safe), never their contents.
        StackRange::Fixed {
            lo: core::ptr::addr_of!(_stack_end) as usize,
            hi: core::ptr::addr_of!(_stack_start) as usize,
        }
    }
}

impl StackSource for RtStack {
    #[inline]
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        FramePointerStack::new(Self::range()).capture(boundary, out)
    }
}
