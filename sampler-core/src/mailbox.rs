//! The snapshot mailbox: a `static` in RAM the firmware publishes its latest snapshot
//! into, for a debugger to read (`heapsnap pull` over the GDB remote protocol, or any
//! probe that can read memory). The firmware needs no transport code at all.
//!
//! ```ignore
//! #[no_mangle] // the host finds it by this name in the ELF's symbol table
//! static HEAPSNAP_MAILBOX: SnapshotMailbox<2048> = SnapshotMailbox::new();
//! // … at the end of a main-loop turn, now and then:
//! HEAPSNAP_MAILBOX.publish(HEAP.profiler(), &[]);
//! ```
//!
//! Layout (`#[repr(C)]`, every field a 32-bit word in the target's byte order, then the
//! bytes), specified in `docs/snapshot-format.md` ("Mailbox"):
//!
//! | offset | field      | meaning |
//! |--------|------------|---------|
//! | 0      | `magic`    | the bytes `HSMB` once something was published, zero before |
//! | 4      | `version`  | [`MAILBOX_VERSION`] |
//! | 8      | `capacity` | `N`, the bytes after the header |
//! | 12     | `seq`      | sequence lock: odd while a publish is writing, even when done; 0 = never published |
//! | 16     | `len`      | bytes of the snapshot at offset 32 (0 when the last one did not fit or failed to encode) |
//! | 20     | `too_big`  | publishes whose snapshot did not fit in `N` bytes |
//! | 24     | `needed`   | bytes the last snapshot that did not fit needed |
//! | 28     | `failed`   | publishes that failed otherwise (re-entered: the previous snapshot stays; encoder error) |
//! | 32     | data       | `N` bytes; the first `len` are one snapshot |
//!
//! A reader of a running target reads `seq`, the header and the bytes, then `seq`
//! again: an odd or changed `seq` means it raced a publish (a torn read) and retries.
//!
//! The `static` is all zero until the first publish, so it lives in `.bss` and its `N`
//! bytes cost no flash.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use core::cell::UnsafeCell;
use core::fmt;
use core::sync::atomic::{fence, AtomicU32, Ordering};

use postcard::ser_flavors::Flavor;

use crate::snapshot::{self, EncodeError, MappingRef, SnapshotSource};
use crate::{Profiler, SnapshotError};

/// First four bytes of a mailbox that has been published into.
pub const MAILBOX_MAGIC: [u8; 4] = *b"HSMB";
/// Layout version of the mailbox header (independent of the snapshot format's).
pub const MAILBOX_VERSION: u32 = 1;
/// Bytes of the header before the snapshot bytes.
pub const MAILBOX_HEADER_LEN: usize = 32;
/// The symbol name `heapsnap pull` looks for unless told another (`--symbol`).
pub const MAILBOX_SYMBOL: &str = "HEAPSNAP_MAILBOX";

/// The header words, as atomics: the device writes them with plain stores inside a
/// critical section (thumbv6m has no compare-and-swap), a debugger reads them at any
/// time.
#[repr(C)]
struct Header {
    magic: AtomicU32,
    version: AtomicU32,
    capacity: AtomicU32,
    seq: AtomicU32,
    len: AtomicU32,
    too_big: AtomicU32,
    needed: AtomicU32,
    failed: AtomicU32,
}

/// A RAM mailbox holding the latest snapshot for a debugger to read; see the module
/// documentation for the layout and the sequence lock.
#[repr(C)]
pub struct SnapshotMailbox<const N: usize> {
    header: Header,
    data: UnsafeCell<[u8; N]>,
}

// The layout is a spec (docs/snapshot-format.md): pin it.
const _: () = assert!(core::mem::size_of::<Header>() == MAILBOX_HEADER_LEN);
const _: () = assert!(core::mem::offset_of!(SnapshotMailbox<1>, data) == MAILBOX_HEADER_LEN);

// SAFETY: `data` is written only by `publish`/`write_source`, inside a critical section
// (one writer at a time); the device never reads it through `&self`. A debugger reading
// it meanwhile is what the sequence lock is for.
unsafe impl<const N: usize> Sync for SnapshotMailbox<N> {}

impl<const N: usize> Default for SnapshotMailbox<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a publish left no snapshot in the mailbox (it is counted in the header too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MailboxError {
    /// The snapshot needs `needed` bytes; the mailbox holds `capacity`.
    TooBig { needed: usize, capacity: usize },
    /// The profiler was re-entered or the encoder failed.
    Snapshot(SnapshotError),
}

impl fmt::Display for MailboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MailboxError::TooBig { needed, capacity } => write!(
                f,
                "snapshot needs {needed} bytes, the mailbox holds {capacity}"
            ),
            MailboxError::Snapshot(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for MailboxError {}

impl<const N: usize> SnapshotMailbox<N> {
    const CAPACITY_FITS: () = assert!(N <= u32::MAX as usize, "mailbox capacity over 4 GiB");

    /// An empty mailbox, all zero (so a `static` of it goes to `.bss`).
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CAPACITY_FITS;
        const fn zero() -> AtomicU32 {
            AtomicU32::new(0)
        }
        SnapshotMailbox {
            header: Header {
                magic: zero(),
                version: zero(),
                capacity: zero(),
                seq: zero(),
                len: zero(),
                too_big: zero(),
                needed: zero(),
                failed: zero(),
            },
            data: UnsafeCell::new([0; N]),
        }
    }

    /// Publish the profiler's current snapshot (the tables are locked while it is
    /// encoded, straight into the mailbox: no other buffer). Returns its length.
    ///
    /// A snapshot that does not fit is not truncated: the mailbox is left empty
    /// (`len` 0), `too_big` is incremented and `needed` says how many bytes it took,
    /// so the host can say how large to make `N`.
    pub fn publish<
        const S: usize,
        const F: usize,
        const B: usize,
        const L: usize,
        const D: usize,
        const T: bool,
    >(
        &self,
        profiler: &Profiler<S, F, B, L, D, T>,
        mappings: &[MappingRef<'_>],
    ) -> Result<usize, MailboxError> {
        match profiler.with_view(mappings, |v| self.write_source(v)) {
            Ok(r) => r,
            Err(e) => {
                // Re-entered: nothing was written; count it where the host looks.
                critical_section::with(|_| bump(&self.header.failed));
                Err(MailboxError::Snapshot(e))
            }
        }
    }

    /// Publish any [`SnapshotSource`] (host programs, tests); see [`publish`](Self::publish).
    pub fn write_source<Src: SnapshotSource + ?Sized>(
        &self,
        src: &Src,
    ) -> Result<usize, MailboxError> {
        critical_section::with(|_| {
            // SAFETY: inside the critical section this is the only writer, and nothing
            // on the device reads `data` through a shared reference.
            let data: &mut [u8] = unsafe { &mut *self.data.get() };
            let h = &self.header;
            let seq = begin(h, data.len());
            let r = snapshot::encode(src, Fill { buf: data, len: 0 });
            let r = finish(h, seq, data.len(), r);
            r.map_err(|e| match e {
                Finished::TooBig(needed) => MailboxError::TooBig {
                    needed,
                    capacity: N,
                },
                Finished::Encode(e) => MailboxError::Snapshot(SnapshotError::Encode(e)),
            })
        })
    }

    /// Snapshots published so far (successful or not).
    pub fn published(&self) -> u32 {
        self.header.seq.load(Ordering::Relaxed) / 2
    }
}

/// Start a publish: mark the header valid and `seq` odd. Not generic over `N` (flash).
fn begin(h: &Header, capacity: usize) -> u32 {
    let seq = h.seq.load(Ordering::Relaxed) | 1;
    h.seq.store(seq, Ordering::Relaxed);
    // Everything after this store is seen after the odd `seq`.
    fence(Ordering::Release);
    h.magic
        .store(u32::from_ne_bytes(MAILBOX_MAGIC), Ordering::Relaxed);
    h.version.store(MAILBOX_VERSION, Ordering::Relaxed);
    h.capacity.store(capacity as u32, Ordering::Relaxed);
    seq
}

enum Finished {
    TooBig(usize),
    Encode(EncodeError),
}

/// End a publish: record the outcome, then make `seq` even again (never 0).
fn finish(
    h: &Header,
    seq: u32,
    capacity: usize,
    r: Result<usize, EncodeError>,
) -> Result<usize, Finished> {
    let r = match r {
        Ok(n) if n <= capacity => Ok(n),
        Ok(n) => {
            h.needed.store(n as u32, Ordering::Relaxed);
            bump(&h.too_big);
            Err(Finished::TooBig(n))
        }
        Err(e) => {
            bump(&h.failed);
            Err(Finished::Encode(e))
        }
    };
    h.len
        .store(*r.as_ref().unwrap_or(&0) as u32, Ordering::Relaxed);
    let next = match seq.wrapping_add(1) {
        0 => 2,
        s => s,
    };
    h.seq.store(next, Ordering::Release);
    r
}

/// `+1` with load and store only (thumbv6m); the caller holds the critical section.
fn bump(counter: &AtomicU32) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
}

/// A sink that writes while there is room and counts every byte, so an oversized
/// snapshot reports the size it needed instead of only "full".
struct Fill<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Flavor for Fill<'_> {
    type Output = usize;

    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = byte;
        }
        self.len = self.len.saturating_add(1);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<usize> {
        Ok(self.len)
    }
}

/// The mailbox header as a host reads it from the target's memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MailboxHeader {
    pub magic: [u8; 4],
    pub version: u32,
    pub capacity: u32,
    pub seq: u32,
    pub len: u32,
    pub too_big: u32,
    pub needed: u32,
    pub failed: u32,
}

impl MailboxHeader {
    /// Parse the first [`MAILBOX_HEADER_LEN`] bytes read from the target, whose byte
    /// order the ELF tells (`little_endian`).
    pub fn parse(bytes: &[u8; MAILBOX_HEADER_LEN], little_endian: bool) -> Self {
        let word = |i: usize| {
            let mut w = [0u8; 4];
            for (k, b) in w.iter_mut().enumerate() {
                *b = bytes.get(i * 4 + k).copied().unwrap_or(0);
            }
            if little_endian {
                u32::from_le_bytes(w)
            } else {
                u32::from_be_bytes(w)
            }
        };
        let [m0, m1, m2, m3, ..] = *bytes;
        MailboxHeader {
            magic: [m0, m1, m2, m3],
            version: word(1),
            capacity: word(2),
            seq: word(3),
            len: word(4),
            too_big: word(5),
            needed: word(6),
            failed: word(7),
        }
    }
}
