//! Semihosting file output, shared by the `cortex-m` and `riscv-rt` features: the two
//! architectures differ only in the instruction sequence that traps to the debugger
//! (ARM `bkpt 0xAB`; RISC-V `slli x0,x0,0x1f; ebreak; srai x0,x0,7`), which
//! cortex-m-semihosting and riscv-semihosting wrap behind the same `syscall!` macro and
//! operation numbers. Neither crate exposes a public `open`, so this is the ~60 lines a
//! user would otherwise copy. Re-exported as `cortex_m::Semihosting*` and
//! `riscv_rt::Semihosting*`.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use core::fmt;

#[cfg(target_arch = "arm")]
use cortex_m_semihosting::{nr, syscall};
use postcard::ser_flavors::Flavor;
#[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
use riscv_semihosting::{nr, syscall};

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
