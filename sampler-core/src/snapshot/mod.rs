//! The snapshot wire format: what a device sends and a host reads.
//!
//! One format, one encoder: the device profiler and the host's owned
//! [`decoded::Snapshot`](crate::decoded::Snapshot) both implement [`SnapshotSource`], and
//! [`encode`] turns any source into bytes, so device and host produce identical bytes
//! from one code path. The byte layout is specified in `docs/snapshot-format.md` and
//! pinned by the golden tests in `tests/snapshot_golden.rs`.
//!
//! Encoding is `no_std`, allocation-free and streaming: fields go straight from the
//! source's tables into a postcard [`Flavor`] (a caller's
//! `&mut [u8]`, a UART, semihosting, a flash page), with the CRC computed on the way
//! and optional COBS framing ([`CobsFlavor`]) for serial links.
//!
//! Decoding (feature `decode`, implied by `std`) lives in [`decode`] / [`decode_frames`].

mod cobs;
mod crc;
#[cfg(feature = "decode")]
mod reader;
mod sink;
mod writer;

pub use self::cobs::CobsFlavor;
pub use self::crc::crc32;
#[cfg(feature = "decode")]
pub use self::reader::{
    decode, decode_detail, decode_frame, decode_frame_in, decode_frames, decode_frames_from,
    decode_frames_with, decode_prefix, Capture, CaptureFrame, CaptureStream, DecodeError, Detail,
};
pub use self::sink::FnSink;
pub use self::writer::{
    encode, encode_framed, encode_framed_stream, encode_framed_to_slice, encode_stream,
    encode_to_slice, encoded_len, encoded_len_framed, EncodeError,
};
#[cfg(feature = "decode")]
pub use self::writer::{encode_framed_to_vec, encode_to_vec};
/// The sink trait snapshots stream into, its slice sink and its error, re-exported so
/// firmware implements or picks a sink without depending on postcard (and on the
/// matching postcard version) itself.
pub use postcard::ser_flavors::{Flavor, Slice};
pub use postcard::Error as FlavorError;

use crate::{Counters, Cycle};

/// First four bytes of every snapshot, so a reader (or a human with `xxd`) can tell a
/// snapshot from any other file.
pub const MAGIC: [u8; 4] = *b"HSNP";

/// The first format version, and the oldest the decoder reads: what encoders before
/// version 4 wrote for a snapshot without an object table (see "Versioning" in the
/// spec; devices in the field still send it).
pub const VERSION: u16 = 1;

/// Format version of a snapshot that carries the object table (§2.5 of the spec):
/// version 1's layout with one more section after the buckets. Encoders before
/// version 4 wrote it when the source offered objects.
pub const VERSION_OBJECTS: u16 = 2;

/// Format version of a snapshot that carries a device timestamp (§2.6 of the spec):
/// a `flags` field after `cycle` says which optional parts follow (the timestamp right
/// after the flags, the object table after the buckets). Encoders before version 4
/// wrote it when the source offered a timestamp.
pub const VERSION_FLAGS: u16 = 3;

/// Format version the encoder writes (§2.3, §6 of the spec): version 3's layout (the
/// `flags` field always present) with stacks that end in frames of an earlier stack
/// naming that stack instead of repeating them. Stacks share their outer frames (the
/// runtime's start, `main`, the main loop), so this halves a host program's stack
/// section; versions 1-3 wrote every frame of every stack.
pub const VERSION_SHARED: u16 = 4;

/// Newest version the decoder reads (it reads every version from 1 up to this one).
pub const LATEST_VERSION: u16 = VERSION_SHARED;

/// How many stacks back the encoder looks for one to share frames with (§2.3): a
/// fixed window, so the device keeps that many stack references on its stack (not a
/// table) and the search costs at most this many suffix compares per stack. On the
/// host example's snapshot 8 finds nearly all of what an unbounded search does.
pub const SHARE_WINDOW: usize = 8;

/// Frames the stacks of a version-4 snapshot may expand to, per byte read from the
/// snapshot's first byte to the end of each stack (§2.3): the cap a decoder enforces.
/// A stack that shares frames costs a few bytes on the wire however many it names, so
/// without a cap a small hostile file (or a capture of many) could make a decoder
/// allocate without bound; with it, shared frames cost a decoder at most 32 bytes of
/// memory per input byte. Real stacks come nowhere near it (the host example's: 0.3
/// frames a byte), and the encoder shares only within it, so it never writes what a
/// decoder refuses.
pub const SHARED_FRAMES_PER_BYTE: u64 = 4;

/// Most frames (own and shared, of all stacks so far) a version-4 snapshot may have
/// expanded to after `bytes` bytes: the cap of §2.3. In `u64`, so that 16-bit targets
/// compute it too.
pub const fn shared_frames_cap(bytes: usize) -> u64 {
    (bytes as u64).saturating_mul(SHARED_FRAMES_PER_BYTE)
}

/// Version-3 and -4 `flags` bit: a [`Timestamp`] follows the flags.
pub const FLAG_TIMESTAMP: u64 = 1;
/// Version-3 and -4 `flags` bit: the object table follows the buckets.
pub const FLAG_OBJECTS: u64 = 2;

/// Most bytes a [`Timestamp`] adds to a snapshot (two `u64` varints; the flags are
/// always written): add it to [`max_encoded_len`] for a snapshot written with one.
pub const TIMESTAMP_MAX_LEN: usize = 2 * 10;

/// When the device took a snapshot, by the integrator's clock: what orders a series
/// in time (the cycle number orders it too, but says nothing of seconds), written only
/// when the integrator supplies it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timestamp {
    /// Clock reading in the integrator's ticks (a cycle counter, SysTick, an RTC):
    /// only differences and order mean something unless the clock is wall time.
    pub ticks: u64,
    /// Ticks per second of that clock (never 0): the host shows seconds.
    pub ticks_per_second: u64,
}

impl Timestamp {
    /// The reading in seconds (for display; `ticks` stays the exact value).
    pub fn seconds(&self) -> f64 {
        self.ticks as f64 / self.ticks_per_second.max(1) as f64
    }
}

/// Number of counters every version-1 snapshot carries (a decoder rejects fewer):
/// the `v1` part of the counter table, so the spec's minimum cannot drift from it.
pub const COUNTERS_V1: usize = Counters::V1;

/// The table sizes a snapshot's length is bounded by: a device profiler's capacities
/// ([`Profiler::MAX_SNAPSHOT_LEN`](crate::Profiler::MAX_SNAPSHOT_LEN) fills it in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Bytes per frame and object size on the device (`size_of::<usize>()`).
    pub word_size: usize,
    /// Most interned stacks.
    pub stacks: usize,
    /// Most frames over all stacks.
    pub frames: usize,
    /// Most frames in one stack.
    pub depth: usize,
    /// Most buckets.
    pub buckets: usize,
    /// Most entries of the object table: the live map's capacity when the snapshot
    /// carries it, 0 when it does not.
    pub objects: usize,
}

/// Bytes of the longest varint postcard writes for a value of `bits` bits.
const fn varint_len(bits: usize) -> usize {
    if bits == 0 {
        1
    } else {
        bits.div_ceil(7)
    }
}

/// Bits needed to hold `n`.
const fn bits(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

/// Upper bound on the bytes [`encode`] writes for any source of this `shape` with
/// these `mappings`, whatever the tables hold: what to size a snapshot buffer to at
/// compile time, so [`EncodeError::SinkFull`] cannot happen.
///
/// Counts every varint at its widest (10 bytes for a `u64` counter), so the bound is
/// loose for young tables; [`encoded_len`] gives the exact figure of the moment.
/// A snapshot with a [`Timestamp`] takes up to [`TIMESTAMP_MAX_LEN`] more.
pub const fn max_encoded_len(shape: Shape, mappings: &[MappingRef<'_>]) -> usize {
    const U64: usize = 10;
    let word_bits = shape.word_size * 8;
    // A first frame is a word; later ones zigzag deltas of words (one more bit).
    let frame = if varint_len(word_bits + 1) < U64 {
        varint_len(word_bits + 1)
    } else {
        U64
    };
    let word = varint_len(word_bits);
    let stack_id = varint_len(32);
    // Magic, version, word size, rate, cycle, flags (one byte: bits 0 and 1).
    let mut n = MAGIC.len() + 2 + 1 + U64 + U64 + 1;
    n += varint_len(bits(Counters::LEN)) + Counters::LEN * U64;
    n += varint_len(bits(mappings.len()));
    let mut i = 0;
    while i < mappings.len() {
        let m = &mappings[i];
        n += 3 * U64;
        n += varint_len(bits(m.name.len())) + m.name.len();
        n += varint_len(bits(m.build_id.len())) + m.build_id.len();
        i += 1;
    }
    let most = shape.stacks.saturating_mul(shape.depth);
    let frames = if shape.frames < most {
        shape.frames
    } else {
        most
    };
    n += varint_len(bits(shape.stacks));
    // Per stack: id, own frames and the share bit, the base (within the window) and
    // the frames shared.
    n += shape.stacks
        * (stack_id
            + varint_len(bits(shape.depth) + 1)
            + varint_len(bits(SHARE_WINDOW))
            + varint_len(bits(shape.depth)));
    n += frames * frame;
    n += varint_len(bits(shape.buckets));
    n += shape.buckets * (stack_id + word + 4 * U64);
    if shape.objects > 0 {
        // Address deltas are zigzag words (one more bit), then stack id and size.
        n += varint_len(bits(shape.objects));
        n += shape.objects * (frame + stack_id + word);
    }
    n + 4
}

/// Upper bound on the bytes [`encode_framed`] writes for a snapshot that [`encode`]
/// writes in `unframed` bytes: one COBS code byte per 254 bytes, one more, and the
/// `0x00` delimiter.
pub const fn max_framed_len(unframed: usize) -> usize {
    unframed + unframed / 254 + 2
}

/// Scalar header fields of a snapshot (everything but the tables).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Pointer width of the profiled program in bytes (2, 4 or 8): tells the host how
    /// wide the frames are and lets the decoder reject frames that do not fit.
    pub word_size: u8,
    /// Mean sampling interval in bytes (1 = every allocation, 0 = off); the host needs
    /// it to unsample.
    pub sample_rate: u64,
    /// Record cycle the published `active` records belong to.
    pub cycle: u64,
    /// Everything dropped or skipped, so nothing is lost silently.
    pub counters: Counters,
}

/// A memory mapping as a source lends it to the encoder (borrowed: no copy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MappingRef<'a> {
    pub start: u64,
    pub end: u64,
    /// File offset that `start` maps.
    pub offset: u64,
    /// Path or name of the mapped object.
    pub name: &'a str,
    /// GNU build id, empty if unknown.
    pub build_id: &'a [u8],
}

/// Frames of one stack in whatever width the source stores them, so a 32-bit device
/// table (`u32`/`usize`) and the host's `u64` vectors encode without a conversion copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frames<'a> {
    U32(&'a [u32]),
    Usize(&'a [usize]),
    U64(&'a [u64]),
}

impl Frames<'_> {
    /// Number of frames.
    pub fn len(&self) -> usize {
        match self {
            Frames::U32(f) => f.len(),
            Frames::Usize(f) => f.len(),
            Frames::U64(f) => f.len(),
        }
    }

    /// Frame `i` widened to `u64` (0 past the end: callers stay below [`len`](Self::len)).
    /// Out of line: the encoder compares two stacks through it, and inlined its loop
    /// was copied for each pair of widths (device flash).
    #[inline(never)]
    pub fn get(&self, i: usize) -> u64 {
        match self {
            Frames::U32(f) => f.get(i).map_or(0, |&x| u64::from(x)),
            Frames::Usize(f) => f.get(i).map_or(0, |&x| x as u64),
            Frames::U64(f) => f.get(i).copied().unwrap_or(0),
        }
    }

    /// True for an empty stack.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frame values widened to `u64`, innermost first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        // One iterator type for all widths; the match is outside the loop.
        let (a, b, c): (&[u32], &[usize], &[u64]) = match *self {
            Frames::U32(f) => (f, &[], &[]),
            Frames::Usize(f) => (&[], f, &[]),
            Frames::U64(f) => (&[], &[], f),
        };
        FramesIter {
            a: a.iter(),
            b: b.iter(),
            c: c.iter(),
        }
    }
}

struct FramesIter<'a> {
    a: core::slice::Iter<'a, u32>,
    b: core::slice::Iter<'a, usize>,
    c: core::slice::Iter<'a, u64>,
}

impl Iterator for FramesIter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if let Some(&x) = self.c.next() {
            return Some(x);
        }
        if let Some(&x) = self.a.next() {
            return Some(u64::from(x));
        }
        self.b.next().map(|&x| x as u64)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.a.len() + self.b.len() + self.c.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for FramesIter<'_> {
    // Not the default, which asserts that `size_hint` agrees: a panic path the device
    // build would keep.
    fn len(&self) -> usize {
        self.a.len() + self.b.len() + self.c.len()
    }
}

/// An interned stack as a source lends it to the encoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackRef<'a> {
    /// Id that buckets refer to (unique within a snapshot).
    pub id: u32,
    /// Return addresses, innermost first.
    pub frames: Frames<'a>,
}

/// Published record of one (stack, object size) pair: the bucket as it travels in a
/// snapshot. The same type is [`decoded::Bucket`](crate::decoded::Bucket) on the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bucket {
    /// Id of the [`StackRef`] that allocated.
    pub stack_id: u32,
    /// Object size in bytes.
    pub size: u64,
    /// The last whole record cycle (Go's `memRecord.active`).
    pub active: Cycle,
}

/// One live sampled object as the object table carries it: where it is, how big, and
/// which bucket (stack, size) allocated it. A leak checker needs exactly this to tell
/// heap objects from other memory in a RAM image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LiveObject {
    /// First byte of the object (the pointer the allocator returned).
    pub addr: u64,
    /// Id of the [`StackRef`] that allocated it.
    pub stack_id: u32,
    /// Requested size in bytes; with `stack_id` it names the object's [`Bucket`].
    pub size: u64,
}

/// Anything that can be written as a snapshot: the device profiler and the host's owned
/// `decoded::Snapshot` implement it, and [`encode`] is the one writer for both.
///
/// The iterators' `len()` is written before their items (so a decoder can bound its
/// allocations); the encoder fails with [`EncodeError::LengthMismatch`] rather than
/// write a snapshot whose counts lie. A device implementation should hold its lock
/// (or otherwise keep the tables still) for the duration of one [`encode`] call.
pub trait SnapshotSource {
    /// Scalar header fields.
    fn header(&self) -> Header;
    /// Memory mappings (empty when unknown, e.g. firmware at link addresses).
    fn mappings(&self) -> impl ExactSizeIterator<Item = MappingRef<'_>>;
    /// Interned stacks.
    fn stacks(&self) -> impl ExactSizeIterator<Item = StackRef<'_>>;
    /// Buckets; every `stack_id` must name a stack from [`stacks`](Self::stacks).
    fn buckets(&self) -> impl ExactSizeIterator<Item = Bucket>;
    /// The object table, when the integrator asked for it (it costs bytes on the
    /// wire): `Some` makes the encoder write it after the buckets (flag bit 1),
    /// `None` (the default) leaves it out. Every object's (`stack_id`, `size`) must
    /// name a bucket from [`buckets`](Self::buckets).
    fn objects(&self) -> Option<impl ExactSizeIterator<Item = LiveObject>> {
        None::<core::iter::Empty<LiveObject>>
    }
    /// The device's clock at this snapshot, when the integrator supplies one: `Some`
    /// makes the encoder write it after the flags (flag bit 0, §2.6), `None` (the
    /// default) leaves it out.
    fn timestamp(&self) -> Option<Timestamp> {
        None
    }
}
