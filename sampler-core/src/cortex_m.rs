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

use core::fmt;

use cortex_m_semihosting::{nr, syscall};
use postcard::ser_flavors::Flavor;

use crate::snapshot::MappingRef;
use crate::{Captured, FramePointerStack, StackRange, StackSource};

extern "C" {
    /// Top of the main stack (initial SP), from cortex-m-rt's `link.x`.
    static _stack_start: u32;
    /// Lowest address the stack may grow to, from cortex-m-rt's `link.x` (0.7.4+).
    static _stack_end: u32;
}

extern "C" {
    /// Start and end of the `.note.gnu.build-id` note in flash (the guide's memory.x).
    static __heapsnap_build_id_start: u8;
    static __heapsnap_build_id_end: u8;
    /// Start and end of `.text`, from cortex-m-rt's `link.x`: where return addresses are.
    static __stext: u8;
    static __etext: u8;
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
///   } > FLASH
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

/// This firmware as the one mapping of its snapshots: `.text` at its link addresses,
/// named `name`, with [`build_id`]. The host matches the `--elf` it is given by that
/// id (a different build is an error) and takes the file offset from the ELF (a
/// firmware cannot know where the linker put `.text` in the file: the offset sent is 0).
#[inline]
pub fn firmware_mapping(name: &'static str) -> MappingRef<'static> {
    MappingRef {
        start: core::ptr::addr_of!(__stext) as u64,
        end: core::ptr::addr_of!(__etext) as u64,
        offset: 0,
        name,
        build_id: build_id(),
    }
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

/// Which semihosting call failed (the debug host answered -1, or the name was bad).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(all(feature = "defmt", target_os = "none"), derive(defmt::Format))]
pub enum SemihostingError {
    /// SYS_OPEN failed, or the name did not end in a NUL byte.
    Open,
    /// SYS_WRITE wrote less than asked.
    Write,
    /// SYS_CLOSE failed.
    Close,
}

impl fmt::Display for SemihostingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SemihostingError::Open => "semihosting open failed (is semihosting enabled?)",
            SemihostingError::Write => "semihosting write failed",
            SemihostingError::Close => "semihosting close failed",
        })
    }
}

/// A file on the debug host, opened for binary writing (truncated). QEMU resolves a
/// relative name against its working directory.
pub struct SemihostingFile {
    fd: usize,
}

impl SemihostingFile {
    /// Create (or truncate) `name`, which must end in a NUL byte (`b"snap.bin\0"`):
    /// semihosting takes a C string plus its length.
    pub fn create(name: &[u8]) -> Result<Self, SemihostingError> {
        let Some((&0, text)) = name.split_last() else {
            return Err(SemihostingError::Open);
        };
        // SAFETY: SYS_OPEN reads `text.len()` bytes at the pointer; the NUL follows them.
        let fd = unsafe { syscall!(OPEN, text.as_ptr(), nr::open::W_TRUNC_BINARY, text.len()) };
        if fd as isize == -1 {
            return Err(SemihostingError::Open);
        }
        Ok(SemihostingFile { fd })
    }

    /// Write all of `bytes` (SYS_WRITE answers with the count *not* written).
    pub fn write_all(&mut self, mut bytes: &[u8]) -> Result<(), SemihostingError> {
        while !bytes.is_empty() {
            // SAFETY: the host reads `bytes.len()` bytes from a live slice.
            let left = unsafe { syscall!(WRITE, self.fd, bytes.as_ptr(), bytes.len()) };
            if left == 0 {
                return Ok(());
            }
            let done = bytes
                .len()
                .checked_sub(left)
                .ok_or(SemihostingError::Write)?;
            bytes = bytes.get(done..).unwrap_or(&[]);
        }
        Ok(())
    }

    /// Close the file (consumes it: a descriptor is closed once).
    pub fn close(self) -> Result<(), SemihostingError> {
        // SAFETY: closes the descriptor SYS_OPEN gave us, once.
        match unsafe { syscall!(CLOSE, self.fd) } {
            0 => Ok(()),
            _ => Err(SemihostingError::Close),
        }
    }
}

/// Streams a snapshot into a [`SemihostingFile`] through a 128-byte buffer: no RAM
/// copy of the snapshot, and one (slow) semihosting call per 128 bytes, not per byte.
/// Output: the bytes written and the file, to close.
pub struct SemihostingSink {
    file: SemihostingFile,
    buf: [u8; 128],
    len: usize,
    written: usize,
}

impl SemihostingSink {
    /// Stream into `file`.
    pub fn new(file: SemihostingFile) -> Self {
        SemihostingSink {
            file,
            buf: [0; 128],
            len: 0,
            written: 0,
        }
    }

    fn flush(&mut self) -> postcard::Result<()> {
        let pending = self.buf.get(..self.len).unwrap_or(&[]);
        let r = self.file.write_all(pending);
        self.written += self.len;
        self.len = 0;
        r.map_err(|_| postcard::Error::SerdeSerCustom)
    }
}

impl Flavor for SemihostingSink {
    type Output = (usize, SemihostingFile);

    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        if self.len == self.buf.len() {
            self.flush()?;
        }
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
        Ok(())
    }

    fn finalize(mut self) -> postcard::Result<Self::Output> {
        self.flush()?;
        Ok((self.written, self.file))
    }
}
