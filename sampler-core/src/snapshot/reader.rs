//! Snapshot decoder (feature `std`): bytes → owned [`Snapshot`], and raw serial
//! captures → every COBS frame's outcome.
//!
//! Hostile input is expected: every count is checked against the bytes that remain
//! before anything is allocated, so memory use is bounded by a small multiple of the
//! input size, and every failure is a typed [`DecodeError`] with a byte offset.

use std::collections::HashSet;
use std::fmt;

use crate::decoded::{Mapping, Snapshot, Stack};
use crate::Counters;

use super::{crc32, Bucket, LiveObject, COUNTERS_V1, LATEST_VERSION, MAGIC, VERSION};

/// Why bytes are not a snapshot. Offsets count from the first byte of the snapshot;
/// for a frame of a serial capture ([`decode_frames`]) they are offsets in the
/// capture file: the encoded byte that holds the decoded byte at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends inside the field starting at `offset`; at least `needed` more
    /// bytes were expected (truncated file, interrupted transfer).
    UnexpectedEof { offset: usize, needed: usize },
    /// The bytes at `offset` cannot be what the format says is there (corruption, or an
    /// encoder bug when the CRC matched).
    Malformed { offset: usize, what: String },
    /// The snapshot is complete but its checksum (at `offset`) does not match:
    /// `expected` is the CRC stored in the snapshot, `found` the CRC of the bytes read.
    BadCrc {
        offset: usize,
        expected: u32,
        found: u32,
    },
    /// The input does not start with the `HSNP` magic: not a snapshot at all.
    BadMagic { found: Vec<u8> },
    /// Written in a format version this decoder does not read.
    UnsupportedVersion { found: u16, supported: u16 },
    /// A COBS frame of a serial capture, at `offset` in the capture, is not valid COBS
    /// (or not terminated).
    BadFrame { offset: usize, what: String },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnexpectedEof { offset, needed } => write!(
                f,
                "snapshot is truncated: the field at byte {offset} needs at least {needed} more \
                 byte(s) (incomplete file or interrupted transfer; capture the snapshot again)"
            ),
            DecodeError::Malformed { offset, what } => {
                write!(f, "snapshot is corrupt at byte {offset}: {what}")
            }
            DecodeError::BadCrc {
                offset,
                expected,
                found,
            } => write!(
                f,
                "snapshot checksum mismatch (CRC at byte {offset}: stored {expected:#010x}, \
                 computed {found:#010x}): the bytes were damaged in transfer or storage"
            ),
            DecodeError::BadMagic { found } => write!(
                f,
                "not a heapsnap snapshot: it starts with {found:02x?}, expected \"HSNP\" \
                 (48 53 4e 50); a raw serial capture must be read as COBS frames"
            ),
            DecodeError::UnsupportedVersion { found, supported } => {
                let hint = if found > supported {
                    "written by a newer sampler-core: upgrade heapsnap"
                } else {
                    "written by an older, unsupported sampler-core"
                };
                write!(f, "snapshot format version {found} is not supported (this reader reads version {supported}): {hint}")
            }
            DecodeError::BadFrame { offset, what } => {
                write!(
                    f,
                    "bad serial frame at byte {offset} of the capture: {what}"
                )
            }
        }
    }
}

impl std::error::Error for DecodeError {}

type Result<T> = std::result::Result<T, DecodeError>;

/// Smallest encodings, used to bound counts by the bytes that remain.
/// Wire position of the `heap_totals` flag: the first counter appended after the
/// version-1 set (`tests/counters_spec.rs` checks the name at that position).
const HEAP_TOTALS: usize = COUNTERS_V1;
const MIN_MAPPING: usize = 5; // start, end, offset, name len, build id len
const MIN_STACK: usize = 2; // id, frame count (version 4: head)
const MIN_BUCKET: usize = 6; // stack id, size, four cycle fields
const MIN_OBJECT: usize = 3; // address (delta), stack id, size

/// How much of a snapshot a decode keeps. Every check is made either way, in the same
/// order, so a snapshot is good or bad (with the same error) whatever is kept: only
/// the tables handed back differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Every table.
    #[default]
    Full,
    /// The header, timestamp, counters and buckets: what a snapshot's totals are made
    /// of (a chart of many snapshots). Mappings, stacks and objects are read and
    /// checked, not kept: they are empty in the [`Snapshot`] handed back, which is
    /// for its totals only (decode it [`Detail::Full`] to convert it).
    Totals,
}

/// Decode exactly one snapshot; bytes after its CRC are an error.
pub fn decode(bytes: &[u8]) -> Result<Snapshot> {
    decode_detail(bytes, Detail::Full)
}

/// [`decode`], keeping what `detail` says.
pub fn decode_detail(bytes: &[u8], detail: Detail) -> Result<Snapshot> {
    let (snap, used) = decode_prefix_detail(bytes, detail)?;
    if used != bytes.len() {
        return Err(DecodeError::Malformed {
            offset: used,
            what: format!(
                "{} unexpected byte(s) after the snapshot's CRC",
                bytes.len() - used
            ),
        });
    }
    Ok(snap)
}

/// Decode the snapshot at the start of `bytes` (e.g. a flash dump with padding after
/// it); returns it and the number of bytes it occupies.
///
/// Order of checks: magic, version, structure (varints and counts), CRC, and only then
/// the meaning (word size, stack ids, UTF-8 names), so corruption is reported as a CRC
/// mismatch rather than as a puzzling semantic error.
pub fn decode_prefix(bytes: &[u8]) -> Result<(Snapshot, usize)> {
    decode_prefix_detail(bytes, Detail::Full)
}

// Never inlined: in the browser, the engine optimizes a function called often, and a
// loop inlined into one long call (10,000 frames of a capture) would run unoptimized
// to its end. (Measured in node: a first read costs ~2× a later one either way, under
// a loaded machine; the gain is not shown yet.)
#[inline(never)]
fn decode_prefix_detail(bytes: &[u8], detail: Detail) -> Result<(Snapshot, usize)> {
    let mut r = Reader {
        buf: bytes,
        pos: 0,
        problem: None,
        keep: detail == Detail::Full,
    };
    let version = r.magic_and_version()?;
    let at = r.pos;
    let word_size = r.take(1)?[0];
    if !matches!(word_size, 2 | 4 | 8) {
        r.defer(at, format!("word size {word_size} (must be 2, 4 or 8)"));
    }
    let word_max = if word_size >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * u32::from(word_size))) - 1
    };
    let sample_rate = r.varint()?;
    let cycle = r.varint()?;
    // Versions 3 and 4: flags saying which optional parts follow (§2.6).
    let flags = if version >= super::VERSION_FLAGS {
        let at = r.pos;
        let flags = r.varint()?;
        let known = super::FLAG_TIMESTAMP | super::FLAG_OBJECTS;
        if flags & !known != 0 {
            r.defer(
                at,
                format!("flags {flags:#x} has bits this reader does not know (known: {known:#x})"),
            );
        }
        flags
    } else if version >= super::VERSION_OBJECTS {
        super::FLAG_OBJECTS
    } else {
        0
    };
    let timestamp = if flags & super::FLAG_TIMESTAMP != 0 {
        let ticks = r.varint()?;
        let at = r.pos;
        let ticks_per_second = r.varint()?;
        if ticks_per_second == 0 {
            r.defer(at, "timestamp with 0 ticks per second".into());
        }
        Some(super::Timestamp {
            ticks,
            ticks_per_second,
        })
    } else {
        None
    };
    let counters = r.counters()?;
    let mappings = r.mappings()?;
    let (stacks, ids) = r.stacks(word_size, word_max, version >= super::VERSION_SHARED)?;
    let buckets = r.buckets(&ids)?;
    // Version 2, or versions 3 and 4 when their flags say so: the object table (§2.5),
    // each object naming one of the buckets.
    let objects = if flags & super::FLAG_OBJECTS != 0 {
        Some(r.objects(&buckets, word_size, word_max)?)
    } else {
        None
    };

    let crc_at = r.pos;
    let stored = r.take(4)?;
    let expected = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    let found = crc32(&bytes[..crc_at]);
    if expected != found {
        return Err(DecodeError::BadCrc {
            offset: crc_at,
            expected,
            found,
        });
    }
    if let Some((offset, what)) = r.problem {
        return Err(DecodeError::Malformed { offset, what });
    }
    let snap = Snapshot {
        version,
        word_size,
        sample_rate,
        cycle,
        counters,
        mappings,
        stacks,
        buckets,
        objects,
        timestamp,
        count_type: None,
    };
    Ok((snap, r.pos))
}

// The sections of a snapshot, in wire order (docs/snapshot-format.md §2). Each reads
// its structure strictly and defers what it means (`Reader::defer`) until the CRC.
impl Reader<'_> {
    /// The magic (a short or foreign start says which) and a supported version.
    fn magic_and_version(&mut self) -> Result<u16> {
        let bytes = self.buf;
        let magic = self.take(MAGIC.len()).map_err(|e| {
            if MAGIC.starts_with(bytes) {
                e
            } else {
                DecodeError::BadMagic {
                    found: bytes.to_vec(),
                }
            }
        })?;
        if magic != MAGIC {
            return Err(DecodeError::BadMagic {
                found: magic.to_vec(),
            });
        }
        let v = self.take(2)?;
        let version = u16::from_le_bytes([v[0], v[1]]);
        if !(VERSION..=LATEST_VERSION).contains(&version) {
            return Err(DecodeError::UnsupportedVersion {
                found: version,
                supported: LATEST_VERSION,
            });
        }
        Ok(version)
    }

    /// The counter table. Counters this reader does not know are skipped (appended by
    /// later encoders); known ones an older encoder did not write stay zero.
    fn counters(&mut self) -> Result<Counters> {
        let at = self.pos;
        let n = self.count(1)?;
        if n < COUNTERS_V1 {
            self.defer(
                at,
                format!("{n} counters (version 1 has at least {COUNTERS_V1})"),
            );
        }
        let mut c = [0u64; Counters::LEN];
        for i in 0..n {
            let at = self.pos;
            let v = self.varint()?;
            if let Some(slot) = c.get_mut(i) {
                *slot = v;
            }
            if i == HEAP_TOTALS && v > 1 {
                // A flag: anything else is not a snapshot this page describes.
                self.defer(at, format!("heap_totals {v} (must be 0 or 1)"));
            }
        }
        Ok(Counters::from_array(c))
    }

    fn mappings(&mut self) -> Result<Vec<Mapping>> {
        let n = self.count(MIN_MAPPING)?;
        let mut mappings = Vec::with_capacity(if self.keep { n } else { 0 });
        for _ in 0..n {
            let at = self.pos;
            let start = self.varint()?;
            let end = self.varint()?;
            let offset = self.varint()?;
            if end < start {
                self.defer(
                    at,
                    format!("mapping ends ({end:#x}) before it starts ({start:#x})"),
                );
            }
            let name_at = self.pos;
            let name = match std::str::from_utf8(self.bytes()?) {
                Ok(s) => s,
                Err(_) => {
                    self.defer(name_at, "mapping name is not UTF-8".into());
                    ""
                }
            };
            let build_id = self.bytes()?;
            if !self.keep {
                continue;
            }
            let (name, build_id) = (name.to_owned(), build_id.to_vec());
            mappings.push(Mapping {
                start,
                end,
                offset,
                name,
                build_id,
            });
        }
        Ok(mappings)
    }

    /// The stacks, and their ids (sorted, each once). `shared`: version 4, where a
    /// stack may end in frames of an earlier one (§2.3).
    fn stacks(
        &mut self,
        word_size: u8,
        word_max: u64,
        shared: bool,
    ) -> Result<(Vec<Stack>, Vec<u32>)> {
        let start = self.pos;
        let n = self.count(MIN_STACK)?;
        let mut stacks: Vec<Stack> = Vec::with_capacity(if self.keep { n } else { 0 });
        // Sorted after, an id read twice is next to itself (a sort, not a hash set: no
        // hashing per id, and no input makes it slow).
        let mut ids: Vec<u32> = Vec::with_capacity(n);
        // Version 4: every stack's frame count, for the stacks that share its frames
        // (kept apart only when the stacks are not kept), and the frames all stacks
        // expand to, against the cap.
        let mut lens: Vec<usize> = Vec::with_capacity(if shared && !self.keep { n } else { 0 });
        let mut expanded = 0u64;
        for j in 0..n {
            let at_stack = self.pos;
            let (id, own, link) = self.stack_head(shared)?;
            ids.push(id);
            // The base's frames this stack ends with, once checked: (base, count).
            let tail = link.and_then(|(at, back, count)| {
                let base = usize::try_from(back)
                    .ok()
                    .filter(|&b| (1..=j).contains(&b))
                    .map(|b| j - b);
                let Some(base) = base else {
                    self.defer(
                        at,
                        format!("stack shares frames of the stack {back} before it, but {j} come before it"),
                    );
                    return None;
                };
                let len = if self.keep {
                    stacks[base].frames.len()
                } else {
                    lens[base]
                };
                if count == 0 || count > len as u64 {
                    self.defer(
                        at,
                        format!("stack shares {count} frames of a stack of {len} (must be 1 to {len})"),
                    );
                    return None;
                }
                Some((base, count as usize))
            });
            let total = own + tail.map_or(0, |(_, c)| c);
            // Room for the shared frames too: they are the base's, already in memory,
            // so this at most doubles what the cap allows.
            let mut frames = Vec::with_capacity(if self.keep { total } else { 0 });
            let mut prev = 0u64;
            for i in 0..own {
                let at = self.pos;
                let f = self.address(i, prev)?;
                if f > word_max {
                    self.defer(
                        at,
                        format!("frame {f:#x} does not fit the {word_size}-byte word size"),
                    );
                }
                if self.keep {
                    frames.push(f);
                }
                prev = f;
            }
            if shared {
                // The cap of §2.3, before the shared frames are copied: what bounds a
                // decoder's memory by its input. Checked at once, as counts are against
                // the bytes left (§5.3): past it, nothing more is expanded.
                expanded = expanded.saturating_add(total as u64);
                let cap = super::shared_frames_cap(self.pos);
                if expanded > cap {
                    return Err(DecodeError::Malformed {
                        offset: at_stack,
                        what: format!(
                            "the stacks expand to {expanded} frames by byte {}, more than the \
                             {cap} a snapshot may (§2.3: shared frames are capped by its size)",
                            self.pos
                        ),
                    });
                }
                if !self.keep {
                    lens.push(total);
                }
            }
            if self.keep {
                if let Some((base, count)) = tail {
                    let outer = &stacks[base].frames;
                    frames.extend_from_slice(&outer[outer.len() - count..]);
                }
                stacks.push(Stack { id, frames });
            }
        }
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            // Rare (the CRC matched): which id is read twice first, and where.
            if let Some((id, at)) = self.first_repeated_stack(start, shared) {
                self.defer(at, format!("stack id {id} appears twice"));
            }
        }
        ids.dedup();
        Ok((stacks, ids))
    }

    /// A stack's id, its own frames' count (checked against the bytes left) and, in
    /// version 4 (`shared`) when it shares frames, where that part starts, how many
    /// stacks back its base is and how many of the base's frames it ends with.
    #[allow(clippy::type_complexity)]
    fn stack_head(&mut self, shared: bool) -> Result<(u32, usize, Option<(usize, u64, u64)>)> {
        let id = self.varint_u32()?;
        if !shared {
            return Ok((id, self.count(1)?, None));
        }
        let at = self.pos;
        let head = self.varint()?;
        let own = head >> 1;
        if u128::from(own) > self.remaining() as u128 {
            let needed = usize::try_from(u128::from(own) - self.remaining() as u128);
            return Err(DecodeError::UnexpectedEof {
                offset: at,
                needed: needed.unwrap_or(usize::MAX),
            });
        }
        let link = if head & 1 != 0 {
            let at = self.pos;
            Some((at, self.varint()?, self.varint()?))
        } else {
            None
        };
        Ok((id, own as usize, link))
    }

    /// The first stack id of the section at `start` (read already) that repeats an
    /// earlier one, and its offset.
    fn first_repeated_stack(&self, start: usize, shared: bool) -> Option<(u32, usize)> {
        let mut r = Reader {
            buf: self.buf,
            pos: start,
            problem: None,
            keep: false,
        };
        let n = r.count(MIN_STACK).ok()?;
        let mut seen = HashSet::with_capacity(n);
        for _ in 0..n {
            let at = r.pos;
            let (id, own, _) = r.stack_head(shared).ok()?;
            if !seen.insert(id) {
                return Some((id, at));
            }
            let mut prev = 0;
            for i in 0..own {
                prev = r.address(i, prev).ok()?;
            }
        }
        None
    }

    /// The buckets, each naming one of the stacks `ids` (sorted).
    fn buckets(&mut self, ids: &[u32]) -> Result<Vec<Bucket>> {
        let n = self.count(MIN_BUCKET)?;
        let mut buckets = Vec::with_capacity(n);
        for _ in 0..n {
            let at = self.pos;
            let stack_id = self.varint_u32()?;
            if ids.binary_search(&stack_id).is_err() {
                self.defer(
                    at,
                    format!("bucket refers to stack id {stack_id}, which is not in the snapshot"),
                );
            }
            let size = self.varint()?;
            let active = crate::Cycle {
                allocs: self.varint()?,
                frees: self.varint()?,
                alloc_bytes: self.varint()?,
                free_bytes: self.varint()?,
            };
            buckets.push(Bucket {
                stack_id,
                size,
                active,
            });
        }
        Ok(buckets)
    }

    /// The object table (version 2), each object naming one of `buckets`.
    fn objects(
        &mut self,
        buckets: &[Bucket],
        word_size: u8,
        word_max: u64,
    ) -> Result<Vec<LiveObject>> {
        let n = self.count(MIN_OBJECT)?;
        // The buckets the objects may name, sorted (none to look up without objects).
        let mut keys: Vec<(u32, u64)> = match n {
            0 => Vec::new(),
            _ => buckets.iter().map(|b| (b.stack_id, b.size)).collect(),
        };
        keys.sort_unstable();
        let mut objects = Vec::with_capacity(if self.keep { n } else { 0 });
        let mut prev = 0u64;
        for i in 0..n {
            let at = self.pos;
            let addr = self.address(i, prev)?;
            prev = addr;
            let stack_id = self.varint_u32()?;
            let size = self.varint()?;
            if addr > word_max {
                self.defer(
                    at,
                    format!("object address {addr:#x} does not fit the {word_size}-byte word size"),
                );
            }
            if keys.binary_search(&(stack_id, size)).is_err() {
                self.defer(
                    at,
                    format!(
                        "object at {addr:#x} names bucket (stack {stack_id}, size {size}), \
                         which is not in the snapshot"
                    ),
                );
            }
            if self.keep {
                objects.push(LiveObject {
                    addr,
                    stack_id,
                    size,
                });
            }
        }
        Ok(objects)
    }

    /// The `i`th address of a delta-encoded list: the first as is, the rest as the
    /// signed (zigzag) distance to `prev`.
    fn address(&mut self, i: usize, prev: u64) -> Result<u64> {
        Ok(if i == 0 {
            self.varint()?
        } else {
            prev.wrapping_add(self.varint_i64()? as u64)
        })
    }
}

/// A cursor that turns every short read into `UnexpectedEof` with the field's offset.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// First semantic problem, reported only once the CRC has matched.
    problem: Option<(usize, String)>,
    /// Keep the mappings, stacks and objects read ([`Detail::Full`]), or only check them.
    keep: bool,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Notes a problem of meaning at `offset`; the first one in the bytes is the one
    /// reported (a check made after its section, as the stack ids', may find one
    /// before a problem already noted).
    fn defer(&mut self, offset: usize, what: String) {
        if self.problem.as_ref().is_none_or(|(at, _)| offset < *at) {
            self.problem = Some((offset, what));
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        if rest.len() < n {
            return Err(DecodeError::UnexpectedEof {
                offset: self.pos,
                needed: n - rest.len(),
            });
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    /// One varint as postcard writes it (LEB128, little-endian groups of 7 bits): at
    /// most `max` bytes, the last of which holds at most `last_max` (the bits the type
    /// has left), as postcard's own reader accepts them (tested against it) without
    /// its per-value setup, the decoder's hottest loop.
    #[inline]
    fn leb128(&mut self, max: usize, last_max: u8, what: &str) -> Result<u64> {
        let rest = &self.buf[self.pos..];
        let mut out = 0u64;
        for i in 0..max {
            let Some(&b) = rest.get(i) else {
                return Err(DecodeError::UnexpectedEof {
                    offset: self.pos,
                    needed: 1,
                });
            };
            out |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                if i == max - 1 && b > last_max {
                    break;
                }
                self.pos += i + 1;
                return Ok(out);
            }
        }
        Err(DecodeError::Malformed {
            offset: self.pos,
            what: format!("invalid varint ({what})"),
        })
    }

    #[inline]
    fn varint(&mut self) -> Result<u64> {
        self.leb128(10, 1, "u64")
    }

    #[inline]
    fn varint_u32(&mut self) -> Result<u32> {
        // Five bytes, the last with 4 bits: never more than u32::MAX.
        Ok(self.leb128(5, 0x0F, "u32 stack id")? as u32)
    }

    #[inline]
    fn varint_i64(&mut self) -> Result<i64> {
        // Zigzag: 0, -1, 1, -2… as 0, 1, 2, 3…
        let n = self.leb128(10, 1, "zigzag frame delta")?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    /// A count of items each at least `min` bytes long: more than the remaining bytes
    /// can hold means the input is cut short, and nothing is allocated for it.
    fn count(&mut self, min: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.varint()?;
        let need = u128::from(n) * min as u128;
        let have = self.remaining() as u128;
        if need > have {
            let needed = usize::try_from(need - have).unwrap_or(usize::MAX);
            return Err(DecodeError::UnexpectedEof { offset: at, needed });
        }
        Ok(n as usize)
    }

    /// Length-prefixed bytes (names, build ids).
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.count(1)?;
        self.take(n)
    }
}

/// One frame found in a raw serial capture, with where it was and what it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureFrame {
    /// Byte offset of the frame's first (COBS-encoded) byte in the capture.
    pub offset: usize,
    /// Encoded length, without the `0x00` delimiter.
    pub len: usize,
    /// The decoded snapshot, or why this frame is not one.
    pub result: Result<Snapshot>,
}

/// Every frame of a raw serial capture, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    pub frames: Vec<CaptureFrame>,
}

impl Capture {
    /// The most recent snapshot that decoded with a valid CRC: on a serial link the
    /// last good one is the one to show.
    pub fn last_good(&self) -> Option<&Snapshot> {
        self.frames
            .iter()
            .rev()
            .find_map(|f| f.result.as_ref().ok())
    }

    /// Frames that were not valid snapshots (garbage, torn, corrupt).
    pub fn bad(&self) -> impl Iterator<Item = &CaptureFrame> {
        self.frames.iter().filter(|f| f.result.is_err())
    }

    /// Number of bad frames (to tell the user how much of the capture was lost).
    pub fn bad_count(&self) -> usize {
        self.bad().count()
    }
}

/// Split a raw serial capture into COBS frames at each `0x00` and decode every one.
///
/// Resynchronises: bytes before a frame (a boot banner, half a frame from before a
/// reset) that carry no delimiter are split off at the next `HSNP` magic and reported
/// as their own bad frame; a last frame with no delimiter is reported as torn.
pub fn decode_frames(capture: &[u8]) -> Capture {
    let mut frames = Vec::new();
    decode_frames_with(capture, Detail::Full, |f| frames.push(f));
    Capture { frames }
}

/// [`decode_frames`] keeping what `detail` says of each snapshot, each frame handed to
/// `on_frame` in capture order (none held here). With [`Detail::Totals`], the frames
/// are good and bad as [`decode_frames`] finds them; a good one is read in full again
/// by [`decode_frame`] from its offset and length.
pub fn decode_frames_with(capture: &[u8], detail: Detail, mut on_frame: impl FnMut(CaptureFrame)) {
    let mut frames = Vec::new();
    let mut start = 0;
    while start < capture.len() {
        let (end, terminated) = match capture[start..].iter().position(|&b| b == 0) {
            Some(i) => (start + i, true),
            None => (capture.len(), false),
        };
        if end > start {
            split_chunk(&capture[start..end], start, terminated, detail, &mut frames);
            for f in frames.drain(..) {
                on_frame(f);
            }
        }
        start = end + 1;
    }
}

/// The good frame of `capture` at `offset`, `len` bytes long (as a [`CaptureFrame`] of
/// [`decode_frames_with`] said), decoded in full; its errors at their offsets in the
/// capture (a frame past the capture's end is an error saying so).
pub fn decode_frame(capture: &[u8], offset: usize, len: usize) -> Result<Snapshot> {
    decode_frame_in(capture, 0, offset, len)
}

/// [`decode_frame`] from a window of the capture: `window` holds its bytes from `base`
/// on (a capture too big to hold, read a slice at a time). Errors at their offsets in
/// the capture.
pub fn decode_frame_in(window: &[u8], base: usize, offset: usize, len: usize) -> Result<Snapshot> {
    let encoded = offset
        .checked_sub(base)
        .and_then(|from| window.get(from..from.checked_add(len)?))
        .ok_or_else(|| DecodeError::BadFrame {
            offset,
            what: if base == 0 {
                format!(
                    "no frame of {len} bytes there: the capture has {} bytes",
                    window.len()
                )
            } else {
                format!(
                    "no frame of {len} bytes there: the bytes read are {base}..{}",
                    base + window.len()
                )
            },
        })?;
    decode_cobs(encoded, true, Detail::Full).map_err(|e| in_capture(e, encoded, offset))
}

/// [`decode_frames`] over a stream, frame by frame: each frame goes to `on_frame` as
/// soon as its delimiter is read, and only the frame being read is held, so a capture
/// of any size is read in memory bounded by `max_frame`. A frame longer than
/// `max_frame` bytes is not held: it is reported as a bad frame naming the limit (and
/// skipped up to the next delimiter). Returns the bytes read; an I/O error ends it.
pub fn decode_frames_from(
    mut input: impl std::io::Read,
    max_frame: usize,
    mut on_frame: impl FnMut(CaptureFrame),
) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut stream = CaptureStream::new(max_frame, Detail::Full);
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        stream.push(buf.get(..n).unwrap_or(&[]), &mut on_frame);
    }
    Ok(stream.finish(on_frame))
}

/// A capture decoded as its bytes arrive, in chunks of any size: what
/// [`decode_frames_from`] does over a reader, for a caller that is handed the bytes
/// rather than reading them (the browser reads a file a slice at a time). Frames,
/// offsets and errors are those [`decode_frames_with`] finds in the whole capture; only
/// the frame being read is held, up to `max_frame` bytes (a longer one is a bad frame
/// naming the limit).
#[derive(Debug)]
pub struct CaptureStream {
    max_frame: usize,
    detail: Detail,
    /// The frame being read: its bytes (unless too long), its offset, its length.
    pending: Vec<u8>,
    start: u64,
    len: usize,
    /// Bytes pushed so far.
    read: u64,
    out: Vec<CaptureFrame>,
}

impl CaptureStream {
    /// A stream that holds frames up to `max_frame` bytes and decodes each as `detail`
    /// says.
    pub fn new(max_frame: usize, detail: Detail) -> CaptureStream {
        CaptureStream {
            max_frame,
            detail,
            pending: Vec::new(),
            start: 0,
            len: 0,
            read: 0,
            out: Vec::new(),
        }
    }

    /// Bytes pushed so far: where the next chunk starts in the capture.
    pub fn position(&self) -> u64 {
        self.read
    }

    /// Reads the next bytes of the capture; every frame they end goes to `on_frame`.
    pub fn push(&mut self, chunk: &[u8], mut on_frame: impl FnMut(CaptureFrame)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.len == 0 {
                // Between frames: runs of delimiters (a line idle at 0x00, a sparse
                // file's holes) skipped a block at a time (one `memcmp` each).
                const ZEROS: [u8; 512] = [0; 512];
                let mut zeros = 0;
                while rest.len() - zeros >= ZEROS.len()
                    && rest[zeros..zeros + ZEROS.len()] == ZEROS[..]
                {
                    zeros += ZEROS.len();
                }
                self.read += zeros as u64;
                rest = &rest[zeros..];
                self.start = self.read;
                if rest.first() == Some(&0) {
                    self.read += 1;
                    rest = &rest[1..];
                    self.start = self.read;
                    continue;
                }
                if rest.is_empty() {
                    break;
                }
            }
            let (piece, delimited) = match rest.iter().position(|&b| b == 0) {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            if self.len <= self.max_frame {
                if self.len + piece.len() <= self.max_frame {
                    self.pending.extend_from_slice(piece);
                } else {
                    // Over the limit: stop holding it (the memory goes back now).
                    self.pending = Vec::new();
                }
            }
            self.len += piece.len();
            self.read += piece.len() as u64;
            rest = &rest[piece.len()..];
            if delimited {
                self.end_frame(true, &mut on_frame);
                self.read += 1;
                rest = &rest[1..];
                self.start = self.read;
                self.len = 0;
            }
        }
    }

    /// Ends the capture: a last frame without its delimiter is reported (torn, or a
    /// snapshot if it decodes whole). Returns the bytes read.
    pub fn finish(mut self, mut on_frame: impl FnMut(CaptureFrame)) -> u64 {
        self.end_frame(false, &mut on_frame);
        self.read
    }

    fn end_frame(&mut self, terminated: bool, on_frame: &mut impl FnMut(CaptureFrame)) {
        let (start, len, max_frame) = (self.start, self.len, self.max_frame);
        if len > max_frame {
            on_frame(CaptureFrame {
                offset: start as usize,
                len,
                result: Err(DecodeError::BadFrame {
                    offset: start as usize,
                    what: format!(
                        "a frame of {len} bytes or more, over the limit of {max_frame} bytes \
                         per frame (not held, not decoded: garbage, or raise the reader's \
                         frame limit; heapsnap: --limit input-size=N)"
                    ),
                }),
            });
        } else if len > 0 {
            split_chunk(
                &self.pending,
                start as usize,
                terminated,
                self.detail,
                &mut self.out,
            );
            for f in self.out.drain(..) {
                on_frame(f);
            }
        }
        self.pending.clear();
    }
}

/// Decode one delimiter-free chunk; when it is not a snapshot as a whole, split it at
/// every embedded frame start (a code byte followed by the magic) and decode each piece.
///
/// Every byte is decoded at most twice (whole, then in its piece), so a hostile capture
/// full of magics stays linear. The price: a frame whose payload itself contains
/// `HSNP` is lost if garbage precedes it without a delimiter.
fn split_chunk(
    chunk: &[u8],
    offset: usize,
    terminated: bool,
    detail: Detail,
    out: &mut Vec<CaptureFrame>,
) {
    let whole = decode_cobs(chunk, terminated, detail);
    let starts = chunk
        .windows(MAGIC.len())
        .enumerate()
        .skip(2)
        .filter(|(_, w)| *w == MAGIC)
        .map(|(i, _)| i - 1);
    if whole.is_ok() || starts.clone().next().is_none() {
        out.push(CaptureFrame {
            offset,
            len: chunk.len(),
            result: whole.map_err(|e| in_capture(e, chunk, offset)),
        });
        return;
    }
    let mut from = 0;
    for to in starts.chain(std::iter::once(chunk.len())) {
        let last = to == chunk.len();
        let piece = &chunk[from..to];
        out.push(CaptureFrame {
            offset: offset + from,
            len: to - from,
            result: decode_cobs(piece, terminated || !last, detail)
                .map_err(|e| in_capture(e, piece, offset + from)),
        });
        from = to;
    }
}

// Never inlined, as `decode_prefix_detail`: called once per frame.
#[inline(never)]
fn decode_cobs(encoded: &[u8], terminated: bool, detail: Detail) -> Result<Snapshot> {
    if !terminated {
        return Err(DecodeError::BadFrame {
            offset: 0,
            what: format!(
                "{} byte(s) at the end of the capture without a 0x00 delimiter (torn frame)",
                encoded.len()
            ),
        });
    }
    let mut raw = vec![0u8; encoded.len()];
    let n = cobs::decode(encoded, &mut raw).map_err(|e| DecodeError::BadFrame {
        offset: 0,
        what: format!("invalid COBS encoding ({e:?})"),
    })?;
    raw.truncate(n);
    decode_detail(&raw, detail)
}

/// An error of the frame `encoded` (at `frame_at` in the capture) with its offsets
/// moved from the decoded frame to the capture.
fn in_capture(e: DecodeError, encoded: &[u8], frame_at: usize) -> DecodeError {
    let at = |decoded: usize| frame_at + encoded_offset(encoded, decoded);
    match e {
        DecodeError::UnexpectedEof { offset, needed } => DecodeError::UnexpectedEof {
            offset: at(offset),
            needed,
        },
        DecodeError::Malformed { offset, what } => DecodeError::Malformed {
            offset: at(offset),
            what,
        },
        DecodeError::BadCrc {
            offset,
            expected,
            found,
        } => DecodeError::BadCrc {
            offset: at(offset),
            expected,
            found,
        },
        DecodeError::BadFrame { offset, what } => DecodeError::BadFrame {
            offset: frame_at + offset,
            what,
        },
        e => e,
    }
}

/// Where the decoded byte `decoded` of a COBS frame sits in its encoding: each block
/// is a code byte `c` and `c - 1` data bytes, and a block shorter than 255 ends in a
/// zero that the next code byte stands for. Past the end: the frame's end.
fn encoded_offset(encoded: &[u8], decoded: usize) -> usize {
    let (mut enc, mut dec) = (0usize, 0usize);
    while enc < encoded.len() {
        let c = usize::from(encoded[enc]);
        if c == 0 {
            break;
        }
        if decoded < dec + c - 1 {
            return (enc + 1 + decoded - dec).min(encoded.len());
        }
        dec += c - 1;
        enc += c;
        if c != 0xFF {
            if decoded == dec {
                return enc.min(encoded.len());
            }
            dec += 1;
        }
    }
    encoded.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Postcard's reading of one value at the start of `bytes`: the value and the bytes
    /// it took, or `None` for a cut-short input, `Some(Err)` for a bad varint.
    fn postcard<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<Result<(T, usize)>> {
        match postcard::take_from_bytes::<T>(bytes) {
            Ok((v, tail)) => Some(Ok((v, bytes.len() - tail.len()))),
            Err(postcard::Error::DeserializeUnexpectedEnd) => None,
            Err(_) => Some(Err(DecodeError::Malformed {
                offset: 0,
                what: String::new(),
            })),
        }
    }

    /// Ours, in the same shape.
    fn ours<T>(
        bytes: &[u8],
        read: impl Fn(&mut Reader) -> Result<T>,
    ) -> Option<Result<(T, usize)>> {
        let mut r = Reader {
            buf: bytes,
            pos: 0,
            problem: None,
            keep: true,
        };
        match read(&mut r) {
            Ok(v) => Some(Ok((v, r.pos))),
            Err(DecodeError::UnexpectedEof {
                offset: 0,
                needed: 1,
            }) => None,
            Err(DecodeError::Malformed { offset: 0, .. }) => Some(Err(DecodeError::Malformed {
                offset: 0,
                what: String::new(),
            })),
            Err(e) => panic!("{bytes:02x?}: {e}"),
        }
    }

    #[test]
    fn varints_are_read_as_postcard_reads_them() {
        // Byte strings of 0 to 12 bytes, mostly continuation bytes, and every last
        // byte around the types' limits: the same values, lengths and failures.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let special = [
            0x00u8, 0x01, 0x02, 0x0F, 0x10, 0x1F, 0x7F, 0x80, 0x81, 0x8F, 0xFF,
        ];
        for _ in 0..200_000 {
            let r = next();
            let len = (r % 13) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    let r = next();
                    if i + 1 == len || r % 4 == 0 {
                        special[(r >> 8) as usize % special.len()]
                    } else {
                        (r >> 16) as u8 | 0x80
                    }
                })
                .collect();
            assert_eq!(
                ours(&bytes, |r| r.varint()),
                postcard::<u64>(&bytes),
                "{bytes:02x?}"
            );
            assert_eq!(
                ours(&bytes, |r| r.varint_u32()),
                postcard::<u32>(&bytes),
                "{bytes:02x?}"
            );
            assert_eq!(
                ours(&bytes, |r| r.varint_i64()),
                postcard::<i64>(&bytes),
                "{bytes:02x?}"
            );
        }
    }
}

#[cfg(test)]
mod detail_tests {
    use super::*;
    use crate::decoded::Bucket;
    use crate::snapshot::{encode_to_vec, LiveObject};

    fn good() -> Snapshot {
        let mut s = Snapshot {
            version: crate::snapshot::VERSION_SHARED,
            word_size: 4,
            sample_rate: 1,
            cycle: 3,
            mappings: vec![Mapping {
                start: 0x1000,
                end: 0x2000,
                name: "fw".into(),
                ..Mapping::default()
            }],
            stacks: vec![
                Stack {
                    id: 7,
                    frames: vec![0x1100, 0x1200],
                },
                Stack {
                    id: 2,
                    frames: vec![0x1300],
                },
            ],
            objects: Some(vec![LiveObject {
                addr: 0x2000_0000,
                stack_id: 7,
                size: 16,
            }]),
            ..Snapshot::default()
        };
        for id in [7, 2] {
            let mut b = Bucket {
                stack_id: id,
                size: 16,
                ..Bucket::default()
            };
            b.active.allocs = 2;
            b.active.alloc_bytes = 32;
            s.buckets.push(b);
        }
        s
    }

    #[test]
    fn totals_keep_less_and_find_the_same_problems() {
        let s = good();
        let totals = decode_detail(&encode_to_vec(&s).unwrap(), Detail::Totals).unwrap();
        let want = Snapshot {
            mappings: vec![],
            stacks: vec![],
            objects: Some(vec![]),
            ..s.clone()
        };
        assert_eq!(totals, want);
        // Problems of meaning, each found by both, with the same message and offset.
        let mut twice = good();
        twice.stacks[1].id = 7;
        twice.stacks.push(Stack {
            id: 2,
            frames: vec![0x00FF_FFFF_FFFF],
        });
        let mut unknown = good();
        unknown.buckets[1].stack_id = 9;
        let mut orphan = good();
        orphan.objects.as_mut().unwrap()[0].size = 8;
        let mut wide = good();
        wide.stacks[0].frames[1] = 1 << 40;
        wide.stacks[1].id = 7;
        for (what, bad) in [
            ("twice", twice),
            ("unknown", unknown),
            ("orphan", orphan),
            ("wide", wide),
        ] {
            let bytes = encode_to_vec(&bad).unwrap();
            let full = decode(&bytes).unwrap_err();
            assert!(
                matches!(full, DecodeError::Malformed { .. }),
                "{what}: {full}"
            );
            assert_eq!(
                decode_detail(&bytes, Detail::Totals).unwrap_err(),
                full,
                "{what}"
            );
        }
        // The first problem in the bytes is the one reported: the frame too wide comes
        // before the repeated id.
        let bytes = encode_to_vec(&{
            let mut w = good();
            w.stacks[0].frames[1] = 1 << 40;
            w.stacks[1].id = 7;
            w
        })
        .unwrap();
        let e = decode(&bytes).unwrap_err().to_string();
        assert!(e.contains("does not fit the 4-byte word size"), "{e}");
        let mut twice = good();
        twice.stacks[1].id = 7;
        let e = decode(&encode_to_vec(&twice).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("stack id 7 appears twice"), "{e}");
    }
}
