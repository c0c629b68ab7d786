//! The one snapshot encoder: any [`SnapshotSource`] → bytes, streaming, no allocation.

use core::fmt;

use postcard::ser_flavors::{Flavor, Slice};

use super::crc::CrcFlavor;
use super::{
    CobsFlavor, Frames, SnapshotSource, FLAG_OBJECTS, FLAG_TIMESTAMP, MAGIC,
    SHARED_FRAMES_PER_BYTE, SHARE_WINDOW, VERSION_SHARED,
};

/// Why a snapshot could not be written.
#[cfg_attr(all(feature = "defmt", target_os = "none"), derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The sink is full (for a slice: the buffer is too small for the snapshot).
    SinkFull {
        /// Bytes the whole snapshot takes in this sink's encoding (framed or not),
        /// counted by a second, writing-nothing pass: size the buffer to this (or to
        /// [`max_encoded_len`](super::max_encoded_len) for any state of the tables).
        needed: usize,
    },
    /// The sink reported another failure (a custom flavor's I/O error).
    SinkFailed,
    /// A source iterator yielded a different number of items than its `len()`
    /// announced; the count is already on the wire, so the snapshot is abandoned
    /// (no CRC is written, a reader rejects the partial bytes).
    LengthMismatch {
        /// `"mappings"`, `"stacks"`, `"buckets"` or `"objects"`.
        section: &'static str,
        announced: usize,
        /// Items yielded (capped at `announced + 1`).
        yielded: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::SinkFull { needed } => write!(
                f,
                "snapshot sink is full: the snapshot needs {needed} bytes (buffer too small?)"
            ),
            EncodeError::SinkFailed => f.write_str("snapshot sink failed to write"),
            EncodeError::LengthMismatch {
                section,
                announced,
                yielded,
            } => write!(
                f,
                "snapshot source announced {announced} {section} but yielded {yielded} \
                 (tables changed while encoding?)"
            ),
        }
    }
}

impl core::error::Error for EncodeError {}

/// What one encoding pass can fail with: the sink's own error (told apart later, when
/// a full sink is answered with the size it would have needed) or a lying source.
enum Failed {
    Sink(postcard::Error),
    Source(EncodeError),
}

impl From<postcard::Error> for Failed {
    fn from(e: postcard::Error) -> Self {
        Failed::Sink(e)
    }
}

/// Counts the bytes written through it and keeps none: the sizing pass.
#[derive(Default)]
struct Count(usize);

impl Flavor for Count {
    type Output = usize;

    fn try_push(&mut self, _: u8) -> postcard::Result<()> {
        self.0 += 1;
        Ok(())
    }

    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.0 += bytes.len();
        Ok(())
    }

    fn finalize(self) -> postcard::Result<usize> {
        Ok(self.0)
    }
}

/// Turns one pass's failure into the public error; a full sink gets a second pass
/// through `size` (the same framing over a counter) so the error says what was needed.
fn finish<O>(
    r: Result<O, Failed>,
    size: impl FnOnce() -> Result<usize, Failed>,
) -> Result<O, EncodeError> {
    match r {
        Ok(o) => Ok(o),
        Err(Failed::Source(e)) => Err(e),
        Err(Failed::Sink(postcard::Error::SerializeBufferFull)) => match size() {
            Ok(needed) => Err(EncodeError::SinkFull { needed }),
            Err(Failed::Source(e)) => Err(e),
            Err(Failed::Sink(_)) => Err(EncodeError::SinkFailed),
        },
        Err(Failed::Sink(_)) => Err(EncodeError::SinkFailed),
    }
}

/// Write `src` as one snapshot into `sink`; returns the sink's output (for a
/// [`Slice`], the written prefix). The CRC is computed on the way and appended.
///
/// Fields go from the source straight to the sink: no table is copied, nothing is
/// allocated, and on error nothing after the failure point is written. A full sink is
/// reported with the bytes the snapshot needs ([`EncodeError::SinkFull`]).
pub fn encode<S, F>(src: &S, sink: F) -> Result<F::Output, EncodeError>
where
    S: SnapshotSource + ?Sized,
    F: Flavor,
{
    finish(write(src, sink), || write(src, Count::default()))
}

/// [`encode`] for a sink that streams (a [`FnSink`](super::FnSink) over a UART or a C
/// callback) and so fails rather than fills up: any sink error is
/// [`EncodeError::SinkFailed`], and no second, counting pass is compiled in (1.8 KB of
/// thumbv7em code: the C library's write paths use this and count themselves when a
/// caller's buffer is too small).
pub fn encode_stream<S, F>(src: &S, sink: F) -> Result<F::Output, EncodeError>
where
    S: SnapshotSource + ?Sized,
    F: Flavor,
{
    finish_stream(write(src, sink))
}

/// [`encode_framed`] as [`encode_stream`] does it: no counting pass.
pub fn encode_framed_stream<S, F>(src: &S, sink: F) -> Result<F::Output, EncodeError>
where
    S: SnapshotSource + ?Sized,
    F: Flavor,
{
    finish_stream(write(src, CobsFlavor::new(sink)))
}

fn finish_stream<O>(r: Result<O, Failed>) -> Result<O, EncodeError> {
    match r {
        Ok(o) => Ok(o),
        Err(Failed::Source(e)) => Err(e),
        Err(Failed::Sink(_)) => Err(EncodeError::SinkFailed),
    }
}

/// Bytes [`encode`] writes for `src` now (nothing is written): to size a buffer, or to
/// check one against [`max_encoded_len`](super::max_encoded_len).
pub fn encoded_len<S: SnapshotSource + ?Sized>(src: &S) -> Result<usize, EncodeError> {
    finish(write(src, Count::default()), || Ok(0))
}

/// Bytes [`encode_framed`] writes for `src` now, delimiter included.
pub fn encoded_len_framed<S: SnapshotSource + ?Sized>(src: &S) -> Result<usize, EncodeError> {
    finish(write(src, CobsFlavor::new(Count::default())), || Ok(0))
}

/// The encoding pass behind every public writer.
fn write<S, F>(src: &S, sink: F) -> Result<F::Output, Failed>
where
    S: SnapshotSource + ?Sized,
    F: Flavor,
{
    let mut w = Out {
        output: CrcFlavor::new(sink),
        written: 0,
    };
    sections(src, &mut w)?;
    // Appends the CRC (4 bytes, little-endian) and finalizes the sink.
    Ok(w.output.finalize()?)
}

/// Everything but the CRC, into `out`.
fn sections<S, F>(src: &S, out: &mut Out<F>) -> Result<(), Failed>
where
    S: SnapshotSource + ?Sized,
    F: Flavor,
{
    out.raw(&MAGIC)?;
    // Version 4: flags say whether a timestamp (§2.6) and the object table (§2.5)
    // follow; stacks share frames (§2.3).
    let objects = src.objects().is_some();
    let timestamp = src.timestamp();
    out.raw(&VERSION_SHARED.to_le_bytes())?;
    let h = src.header();
    out.raw(&[h.word_size])?;
    out.serialize_u64(h.sample_rate)?;
    out.serialize_u64(h.cycle)?;
    let flags = if timestamp.is_some() {
        FLAG_TIMESTAMP
    } else {
        0
    } | if objects { FLAG_OBJECTS } else { 0 };
    out.serialize_u64(flags)?;
    if let Some(t) = timestamp {
        out.serialize_u64(t.ticks)?;
        out.serialize_u64(t.ticks_per_second)?;
    }
    // The whole counter table, in its order (a version-1 reader keeps what it knows).
    let counters = h.counters.to_array();
    out.serialize_u64(counters.len() as u64)?;
    for v in counters {
        out.serialize_u64(v)?;
    }

    section(out, "mappings", src.mappings(), |out, _, m| {
        out.serialize_u64(m.start)?;
        out.serialize_u64(m.end)?;
        out.serialize_u64(m.offset)?;
        out.serialize_bytes(m.name.as_bytes())?;
        out.serialize_bytes(m.build_id)?;
        Ok(())
    })?;

    // The last stacks written, by position modulo the window: the bases a stack may
    // share its outer frames with.
    let mut recent: [Option<Frames<'_>>; SHARE_WINDOW] = [None; SHARE_WINDOW];
    // Frames of the stacks written, own and shared: a stack shares only while they stay
    // within the decoder's cap for the bytes written before it (the stack's own bytes
    // only add room), so whatever this writes, a decoder accepts.
    // In `usize`, the device's word (less code than `u64` on a 32-bit core): where it
    // saturates, the cap it computes is only lower than the decoder's.
    let mut expanded = 0usize;
    section(out, "stacks", src.stacks(), |out, j, s| {
        let len = s.frames.len();
        let cap = out.written.saturating_mul(SHARED_FRAMES_PER_BYTE as usize);
        let room = cap.saturating_sub(expanded);
        out.serialize_u32(s.id)?;
        let (back, shared) = match best_base(&recent, j, s.frames) {
            (_, 0) => (0, 0),
            _ if len > room => (0, 0),
            found => found,
        };
        expanded = expanded.saturating_add(len);
        let own = len - shared;
        // Own frames and, in the low bit, whether a base follows.
        out.serialize_u64(((own as u64) << 1) | u64::from(shared > 0))?;
        if shared > 0 {
            out.serialize_u64(back as u64)?;
            out.serialize_u64(shared as u64)?;
        }
        let mut prev = 0u64;
        for (i, f) in s.frames.iter().take(own).enumerate() {
            if i == 0 {
                out.serialize_u64(f)?;
            } else {
                // Signed distance to the previous frame, zigzag varint: neighbouring
                // return addresses are close, so most deltas take 2-3 bytes.
                out.serialize_i64(f.wrapping_sub(prev) as i64)?;
            }
            prev = f;
        }
        if let Some(slot) = recent.get_mut(j % SHARE_WINDOW) {
            *slot = Some(s.frames);
        }
        Ok(())
    })?;

    section(out, "buckets", src.buckets(), |out, _, b| {
        out.serialize_u32(b.stack_id)?;
        out.serialize_u64(b.size)?;
        out.serialize_u64(b.active.allocs)?;
        out.serialize_u64(b.active.frees)?;
        out.serialize_u64(b.active.alloc_bytes)?;
        out.serialize_u64(b.active.free_bytes)?;
        Ok(())
    })?;

    if let Some(objects) = src.objects() {
        let mut prev = 0u64;
        section(out, "objects", objects, |out, i, o| {
            if i == 0 {
                out.serialize_u64(o.addr)?;
            } else {
                // Like frames: the signed distance to the previous object's address.
                out.serialize_i64(o.addr.wrapping_sub(prev) as i64)?;
            }
            prev = o.addr;
            out.serialize_u32(o.stack_id)?;
            out.serialize_u64(o.size)?;
            Ok(())
        })?;
    }
    Ok(())
}

/// The stack among the last [`SHARE_WINDOW`] written (`recent`, before stack `j`) whose
/// outer frames end `frames` the longest way: how many stacks back it is, and how many
/// frames it gives (0: none does). Ties go to the nearest.
///
/// Compared by index through [`Frames::get`], out of line: comparing the slices per
/// width (a loop for each) took the C library over its 8 KiB of flash.
fn best_base(recent: &[Option<Frames<'_>>], j: usize, frames: Frames<'_>) -> (usize, usize) {
    let mut best = (0, 0);
    let n = frames.len();
    for back in 1..=j.min(SHARE_WINDOW) {
        let Some(Some(base)) = recent.get((j - back) % SHARE_WINDOW) else {
            continue;
        };
        let m = base.len();
        // Do the stacks agree at `t` frames from their outer ends?
        let same = |t: usize| t < n && t < m && frames.get(n - 1 - t) == base.get(m - 1 - t);
        // A base beats the best only if it also matches the frame past the best's
        // shared ones (with no best yet, the outermost): that one compared first turns
        // most bases away at once (stacks share their outer frames with many others).
        if !same(best.1) {
            continue;
        }
        let mut shared = 0;
        while same(shared) {
            shared += 1;
        }
        if shared > best.1 {
            best = (back, shared);
        }
    }
    best
}

/// What every section writes into: the sink behind the CRC, and postcard's varints
/// (LEB128; zigzag for signed values), the only postcard encodings the format uses.
///
/// Written here rather than through postcard's `Serializer`: its varint is inlined at
/// every field (with a slice bound LLVM keeps as a panic path at opt-level "z"), which
/// made the encoder 2.8 KB of thumbv7em code in the C library; one out-of-line varint
/// is a call per field. The bytes are the same (pinned by `tests/snapshot_golden.rs`).
struct Out<F> {
    output: CrcFlavor<F>,
    /// Bytes written so far: what the frames stacks share are bounded by (§2.3).
    written: usize,
}

impl<F: Flavor> Out<F> {
    /// Bytes as they are.
    fn raw(&mut self, bytes: &[u8]) -> Result<(), Failed> {
        self.output.try_extend(bytes)?;
        self.written += bytes.len();
        Ok(())
    }

    /// An unsigned varint: 7 bits a byte, low first, the top bit set on all but the last.
    #[inline(never)]
    fn serialize_u64(&mut self, mut v: u64) -> Result<(), Failed> {
        let mut buf = [0u8; 10];
        let mut n = 0;
        for b in buf.iter_mut() {
            n += 1;
            if v < 0x80 {
                *b = v as u8;
                break;
            }
            *b = (v as u8) | 0x80;
            v >>= 7;
        }
        // A u64 takes at most 10 bytes: `n` is never past the end.
        self.raw(buf.get(..n).unwrap_or(&buf))
    }

    fn serialize_u32(&mut self, v: u32) -> Result<(), Failed> {
        self.serialize_u64(u64::from(v))
    }

    /// Zigzag: small magnitudes of either sign take few bytes.
    fn serialize_i64(&mut self, v: i64) -> Result<(), Failed> {
        self.serialize_u64(((v << 1) ^ (v >> 63)) as u64)
    }

    /// Length-prefixed bytes.
    fn serialize_bytes(&mut self, bytes: &[u8]) -> Result<(), Failed> {
        self.serialize_u64(bytes.len() as u64)?;
        self.raw(bytes)
    }
}

/// One counted section: `items.len()`, then each item through `each` (given its index).
/// The count is on the wire before the items, so a source that yields another number
/// than it announced fails the snapshot instead of writing one whose counts lie.
fn section<F: Flavor, I: ExactSizeIterator>(
    out: &mut Out<F>,
    name: &'static str,
    items: I,
    mut each: impl FnMut(&mut Out<F>, usize, I::Item) -> Result<(), Failed>,
) -> Result<(), Failed> {
    let announced = items.len();
    out.serialize_u64(announced as u64)?;
    let mut yielded = 0;
    for item in items {
        if yielded == announced {
            // One more than announced is enough to know the source lied.
            yielded += 1;
            break;
        }
        each(out, yielded, item)?;
        yielded += 1;
    }
    check(name, announced, yielded)
}

fn check(section: &'static str, announced: usize, yielded: usize) -> Result<(), Failed> {
    if announced == yielded {
        Ok(())
    } else {
        Err(Failed::Source(EncodeError::LengthMismatch {
            section,
            announced,
            yielded,
        }))
    }
}

/// [`encode`] into a caller's buffer; returns the written prefix.
pub fn encode_to_slice<'a, S>(src: &S, buf: &'a mut [u8]) -> Result<&'a mut [u8], EncodeError>
where
    S: SnapshotSource + ?Sized,
{
    encode(src, Slice::new(buf))
}

/// [`encode`] as one COBS frame followed by the `0x00` delimiter, for serial links
/// where a reader must find frame boundaries (and resync) in a raw byte stream.
pub fn encode_framed<S, F>(src: &S, sink: F) -> Result<F::Output, EncodeError>
where
    S: SnapshotSource + ?Sized,
    F: Flavor,
{
    finish(write(src, CobsFlavor::new(sink)), || {
        write(src, CobsFlavor::new(Count::default()))
    })
}

/// [`encode_framed`] into a caller's buffer; returns the written prefix.
pub fn encode_framed_to_slice<'a, S>(
    src: &S,
    buf: &'a mut [u8],
) -> Result<&'a mut [u8], EncodeError>
where
    S: SnapshotSource + ?Sized,
{
    encode_framed(src, Slice::new(buf))
}

/// [`encode`] into a new `Vec` (host programs, tests).
#[cfg(feature = "decode")]
pub fn encode_to_vec<S: SnapshotSource + ?Sized>(src: &S) -> Result<Vec<u8>, EncodeError> {
    encode(src, postcard::ser_flavors::ExtendFlavor::new(Vec::new()))
}

/// [`encode_framed`] into a new `Vec`.
#[cfg(feature = "decode")]
pub fn encode_framed_to_vec<S: SnapshotSource + ?Sized>(src: &S) -> Result<Vec<u8>, EncodeError> {
    encode_framed(src, postcard::ser_flavors::ExtendFlavor::new(Vec::new()))
}
