//! Files on the debug host over ARM semihosting (SYS_OPEN / SYS_WRITE / SYS_CLOSE).
//!
//! QEMU resolves relative names against its working directory; `cargo xtask firmware`
//! starts QEMU in `target/firmware-out/`, so `snap-000.bin` lands there.

use cortex_m_semihosting::{nr, syscall};
use postcard::ser_flavors::Flavor;

/// Why a semihosting file operation failed (the host's answer was -1).
#[derive(Debug, Clone, Copy)]
pub enum HostError {
    Open,
    Write,
    Close,
}

/// A host file opened for binary writing (truncated).
pub struct HostFile {
    fd: usize,
}

impl HostFile {
    /// `name` must end in a NUL byte (semihosting passes a C string plus its length).
    pub fn create(name: &[u8]) -> Result<Self, HostError> {
        let Some((&0, text)) = name.split_last() else {
            return Err(HostError::Open);
        };
        // SAFETY: SYS_OPEN reads `text.len()` bytes at the pointer; the NUL follows them.
        let fd = unsafe { syscall!(OPEN, text.as_ptr(), nr::open::W_TRUNC_BINARY, text.len()) };
        if fd as isize == -1 {
            return Err(HostError::Open);
        }
        Ok(HostFile { fd })
    }

    /// Write all of `bytes` (SYS_WRITE returns the count *not* written).
    pub fn write_all(&mut self, mut bytes: &[u8]) -> Result<(), HostError> {
        while !bytes.is_empty() {
            // SAFETY: the host reads `bytes.len()` bytes from a live slice.
            let left = unsafe { syscall!(WRITE, self.fd, bytes.as_ptr(), bytes.len()) };
            if left == 0 {
                return Ok(());
            }
            if left > bytes.len() {
                return Err(HostError::Write);
            }
            bytes = &bytes[bytes.len() - left..];
        }
        Ok(())
    }

    pub fn close(self) -> Result<(), HostError> {
        // SAFETY: closes the descriptor SYS_OPEN gave us, once (self is consumed).
        match unsafe { syscall!(CLOSE, self.fd) } {
            0 => Ok(()),
            _ => Err(HostError::Close),
        }
    }
}

/// A postcard [`Flavor`] that streams into a [`HostFile`] through a small buffer, so a
/// snapshot goes from the profiler's tables to the host without a RAM copy of it
/// (semihosting calls are slow: one per 128 bytes, not one per byte).
pub struct HostFlavor {
    file: HostFile,
    buf: [u8; 128],
    len: usize,
    written: usize,
}

impl HostFlavor {
    pub fn new(file: HostFile) -> Self {
        HostFlavor {
            file,
            buf: [0; 128],
            len: 0,
            written: 0,
        }
    }

    fn flush(&mut self) -> Result<(), HostError> {
        let pending = self.buf.get(..self.len).unwrap_or(&[]);
        let r = self.file.write_all(pending);
        self.written += self.len;
        self.len = 0;
        r
    }
}

impl Flavor for HostFlavor {
    /// (bytes written, the file to close).
    type Output = (usize, HostFile);

    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        if self.len == self.buf.len() {
            self.flush().map_err(|_| postcard::Error::SerdeSerCustom)?;
        }
        self.buf[self.len] = byte;
        self.len += 1;
        Ok(())
    }

    fn finalize(mut self) -> postcard::Result<Self::Output> {
        self.flush().map_err(|_| postcard::Error::SerdeSerCustom)?;
        Ok((self.written, self.file))
    }
}

/// `snap-NNN.bin\0` for snapshot number `n` (0..=999), without formatting machinery.
pub fn snapshot_name(n: u32) -> [u8; 13] {
    let mut name = *b"snap-000.bin\0";
    name[5] = b'0' + (n / 100 % 10) as u8;
    name[6] = b'0' + (n / 10 % 10) as u8;
    name[7] = b'0' + (n % 10) as u8;
    name
}

/// Is `word` one of the words of the command line the debug host gives (SYS_GET_CMDLINE:
/// QEMU's `-semihosting-config …,arg=WORD` or `-append`)? False when there is none.
pub fn cmdline_has(word: &[u8]) -> bool {
    let mut buf = [0u8; 128];
    // The block SYS_GET_CMDLINE fills in: buffer address, then its size (updated to
    // the length written).
    let mut block = [buf.as_mut_ptr() as usize, buf.len() - 1];
    // SAFETY: the host writes at most `block[1]` bytes into `buf`, which outlives the call.
    let r = unsafe { cortex_m_semihosting::syscall(nr::GET_CMDLINE, &mut block) };
    if r != 0 {
        return false;
    }
    let line = buf.get(..block[1].min(buf.len())).unwrap_or(&[]);
    line.split(|&b| b == b' ' || b == 0).any(|w| w == word)
}
