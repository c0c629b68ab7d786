//! The firmware's identity in its snapshots, shared by the `cortex-m` and `riscv-rt`
//! features: both runtimes' `link.x` define `__stext` / `__etext` (riscv-rt since 0.14),
//! and the GNU build-id note is kept between two symbols by the user's `memory.x`.
//! Re-exported as `cortex_m::{build_id, firmware_mapping}` and the same in `riscv_rt`.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use crate::snapshot::MappingRef;

extern "C" {
    /// Start and end of the `.note.gnu.build-id` note in flash (the guide's memory.x).
    static __heapsnap_build_id_start: u8;
    static __heapsnap_build_id_end: u8;
    /// Start and end of `.text`, from the runtime's `link.x` (cortex-m-rt, riscv-rt):
    /// where return addresses are.
    static __stext: u8;
    static __etext: u8;
}

#[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
extern "C" {
    /// Start of `.rodata`, from riscv-rt's `link.x` (0.14+).
    static __srodata: u8;
}

/// The firmware's code, `[start, end)`: every return address of a stack lies in it.
///
/// cortex-m-rt: `.text`. riscv-rt: `.text` and what follows it up to `.rodata`, since
/// riscv-rt (0.14 to at least 0.18) puts its `_start_rust`, the root frame of every
/// stack, in an `.init.rust` section its `link.x` no longer names: the linker places
/// that orphan after `.text` (checked on the QEMU firmware, where `__etext` equals
/// `_start_rust`). With `.rodata` below `.text` (another region), `.text` alone; in
/// another region above it, the range also spans the gap between the two.
#[inline]
pub(crate) fn code_range() -> (usize, usize) {
    let start = core::ptr::addr_of!(__stext) as usize;
    let etext = core::ptr::addr_of!(__etext) as usize;
    #[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
    let etext = etext.max(core::ptr::addr_of!(__srodata) as usize);
    (start, etext)
}

/// The GNU build id the linker wrote into this firmware (empty if the note is missing
/// or malformed). Needs `--build-id` on the link line and the note kept in flash
/// between two symbols, in `memory.x` after the `MEMORY` block:
///
/// ```text
/// SECTIONS {
///   .heapsnap_build_id : ALIGN(4) {
///     __heapsnap_build_id_start = .;
///     KEEP(*(.note.gnu.build-id));
///     __heapsnap_build_id_end = .;
///   } > FLASH          /* riscv-rt: > REGION_RODATA */
/// } INSERT AFTER .rodata;
/// ```
///
/// and `"-C", "link-arg=--build-id=sha1"` in the target's rustflags (rust-lld, GNU ld).
/// `#[inline]`: a firmware that never asks for it needs neither.
#[inline]
pub fn build_id() -> &'static [u8] {
    let start = core::ptr::addr_of!(__heapsnap_build_id_start);
    let end = core::ptr::addr_of!(__heapsnap_build_id_end);
    let len = (end as usize).saturating_sub(start as usize);
    // SAFETY: the linker script places the note (in flash, read-only, 'static) between
    // the two symbols.
    let note = unsafe { core::slice::from_raw_parts(start, len) };
    crate::note::gnu_build_id(note).unwrap_or(&[])
}

/// This firmware as the one mapping of its snapshots: its code ([`code_range`]) at
/// its link addresses, named `name`, with [`build_id`]. The host matches the `--elf` it is given by that
/// id (a different build is an error) and takes the file offset from the ELF (a
/// firmware cannot know where the linker put `.text` in the file: the offset sent is 0).
#[inline]
pub fn firmware_mapping(name: &'static str) -> MappingRef<'static> {
    MappingRef {
        start: code_range().0 as u64,
        end: code_range().1 as u64,
        offset: 0,
        name,
        build_id: build_id(),
    }
}
