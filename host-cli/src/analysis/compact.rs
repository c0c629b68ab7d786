//! Decoding a large profile for viewing: samples are merged by stack while they are
//! read, so a 500k-sample file never exists as 500k `Sample` structs in memory.
//!
//! Every view of the viewer (top, flame, source, diff) is a sum over samples, and so
//! unchanged by merging samples with the same stack; the merged result is an ordinary
//! validated [`Profile`]. Labels are dropped except pprof's diff-base label (which
//! changes how percentages are computed), so samples that differ only in labels merge;
//! samples whose values differ in sign stay apart (pprof's total sums absolute values).
//!
//! Only the `Sample` messages are read by hand (into reused buffers, looked up by
//! slice, so a repeated stack costs no allocation); everything else goes through prost,
//! and any framing problem falls back to prost's decoder for its error message.

use crate::profile::{self, Label, Profile, ProfileError, Sample, DIFF_BASE_LABEL};
use prost::Message;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Decodes pprof bytes (gzipped or raw) into a validated profile whose samples are
/// merged by (stack, diff-base label). Same errors as [`profile::decode`].
pub fn decode_compact(bytes: &[u8]) -> Result<Profile, ProfileError> {
    decode_compact_with_limit(bytes, profile::DEFAULT_MAX_INFLATED)
}

/// [`decode_compact`] with an explicit cap on the inflated size.
pub fn decode_compact_with_limit(bytes: &[u8], max_inflated: usize) -> Result<Profile, ProfileError> {
    if bytes.is_empty() {
        return Err(ProfileError::Empty);
    }
    let inflated;
    let raw: &[u8] = if profile::is_gzip(bytes) {
        inflated = profile::inflate(bytes, max_inflated)?;
        &inflated
    } else {
        bytes
    };
    match merged(raw) {
        Some(p) => Ok(p),
        // Anything wrong: the full decoder and validation say what, and where (with
        // the file's own sample indices).
        // (`raw` is already inflated: no second gzip sniffing.)
        None => {
            let p = Profile::decode(raw)?;
            p.check_valid()?;
            Ok(p)
        }
    }
}

/// Sample groups being merged. A group is keyed by the *raw bytes* of its samples'
/// location ids (packed varints as written), so a repeated stack is hashed and compared
/// as a few machine words and its ids are decoded only once, when its group is made.
/// Equal bytes mean equal stacks; equal stacks written differently (non-canonical
/// varints, packed vs not) merely stay in separate groups, which changes no figure.
///
/// Samples arrive in random stack order, so the cost is cache misses: each group is one
/// contiguous record (hash, key, values) found through a flat open-addressing table,
/// which is two misses per sample where a `HashMap` of separate arenas took five.
#[derive(Default)]
struct Groups {
    /// Linear probing over record offsets + 1 (0 = empty); a power of two in size.
    table: Vec<u32>,
    /// Records: `[hash, value sign mask, base << 63 | values << 32 | key bytes,
    /// values…, key bytes packed little-endian into words…]`. Samples merge only when
    /// hash, signs, base label, value count and key all agree.
    arena: Vec<u64>,
    /// Record offset of each group, in order of first appearance.
    recs: Vec<u32>,
    /// Each group's decoded location ids (a range of `ids`).
    ids_at: Vec<(u32, u32)>,
    ids: Vec<u64>,
    /// The key being looked up, as words.
    words: Vec<u64>,
}

const HEAD: usize = 3;

impl Groups {
    /// Adds a sample (its location-id bytes, values and diff-base flag): summed into
    /// the group with the same key, else a new group. `None` when the location bytes
    /// are not valid varints or the groups outgrow 32-bit offsets.
    fn add(&mut self, locs: &[u8], vals: &[i64], base: bool) -> Option<()> {
        let mut signs = 0u64;
        let mut k = 0;
        while k < vals.len() && k < 64 {
            signs |= u64::from(vals[k] < 0) << k;
            k += 1;
        }
        let shape = u64::from(base) << 63 | (vals.len() as u64) << 32 | locs.len() as u64;
        if vals.len() >= 1 << 31 || locs.len() >= 1 << 32 {
            return None;
        }
        // The key as words, hashed with its shape.
        self.words.clear();
        let mut h = Fx(signs ^ shape.rotate_left(17));
        let mut i = 0;
        while i + 8 <= locs.len() {
            let w = u64::from_le_bytes([
                locs[i],
                locs[i + 1],
                locs[i + 2],
                locs[i + 3],
                locs[i + 4],
                locs[i + 5],
                locs[i + 6],
                locs[i + 7],
            ]);
            h.write_u64(w);
            self.words.push(w);
            i += 8;
        }
        if i < locs.len() {
            let mut w = 0u64;
            let mut s = 0;
            while i < locs.len() {
                w |= u64::from(locs[i]) << s;
                s += 8;
                i += 1;
            }
            h.write_u64(w);
            self.words.push(w);
        }
        let hash = h.finish();
        if self.table.len() < 2 * (self.recs.len() + 1) {
            self.grow();
        }
        let mask = self.table.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            let at = self.table[slot];
            if at == 0 {
                break;
            }
            let r = (at - 1) as usize;
            let head = &self.arena[r..r + HEAD];
            if head[0] == hash && head[1] == signs && head[2] == shape {
                let ks = r + HEAD + vals.len();
                if same(&self.arena[ks..ks + self.words.len()], &self.words) {
                    for (a, b) in self.arena[r + HEAD..ks].iter_mut().zip(vals) {
                        *a = (*a as i64).wrapping_add(*b) as u64;
                    }
                    return Some(());
                }
            }
            slot = (slot + 1) & mask;
        }
        // A new group: decode (and so validate) its ids once.
        let is = self.ids.len();
        let mut p = 0;
        while p < locs.len() {
            self.ids.push(varint(locs, &mut p)?);
        }
        let r = u32::try_from(self.arena.len()).ok().filter(|&r| r < u32::MAX)?;
        self.ids_at.push((is as u32, (self.ids.len() - is) as u32));
        self.arena.extend_from_slice(&[hash, signs, shape]);
        self.arena.extend(vals.iter().map(|&v| v as u64));
        self.arena.extend_from_slice(&self.words);
        self.recs.push(r);
        self.table[slot] = r + 1;
        Some(())
    }

    /// Doubles the table (at least 1024 slots) and re-inserts every record by its hash.
    fn grow(&mut self) {
        let n = (self.table.len() * 2).max(1024);
        self.table = vec![0; n];
        let mask = n - 1;
        for &r in &self.recs {
            let mut slot = self.arena[r as usize] as usize & mask;
            while self.table[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            self.table[slot] = r + 1;
        }
    }

    /// Group `k`: (location ids, values, has the diff-base label).
    fn group(&self, k: usize) -> (&[u64], impl Iterator<Item = i64> + '_, bool) {
        let (is, n) = self.ids_at[k];
        let r = self.recs[k] as usize;
        let shape = self.arena[r + 2];
        let nv = (shape >> 32 & 0x7fff_ffff) as usize;
        (
            &self.ids[is as usize..(is + n) as usize],
            self.arena[r + HEAD..r + HEAD + nv].iter().map(|&v| v as i64),
            shape >> 63 == 1,
        )
    }
}

/// Slice equality as a word loop: `==` on slices becomes `memcmp`, which on wasm32 is
/// a byte loop.
#[inline(always)]
fn same(a: &[u64], b: &[u64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// One top-level field: (tag, wire type, whole field incl. key, payload).
fn fields(raw: &[u8]) -> impl Iterator<Item = Option<(u64, u64, &[u8], &[u8])>> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        if pos >= raw.len() {
            return None;
        }
        let r = field(raw, &mut pos);
        if r.is_none() {
            pos = raw.len();
        }
        Some(r)
    })
}

#[inline(always)]
fn field<'a>(raw: &'a [u8], pos: &mut usize) -> Option<(u64, u64, &'a [u8], &'a [u8])> {
    let start = *pos;
    let key = varint(raw, pos)?;
    let (tag, wire) = (key >> 3, key & 7);
    let body = *pos;
    let end = match wire {
        0 => {
            varint(raw, pos)?;
            *pos
        }
        1 => pos.checked_add(8)?,
        2 => {
            let n = usize::try_from(varint(raw, pos)?).ok()?;
            let b = *pos;
            return {
                let end = b.checked_add(n)?;
                (tag != 0 && end <= raw.len()).then(|| {
                    *pos = end;
                    (tag, wire, &raw[start..end], &raw[b..end])
                })
            };
        }
        5 => pos.checked_add(4)?,
        _ => return None,
    };
    if tag == 0 || end > raw.len() {
        return None;
    }
    *pos = end;
    Some((tag, wire, &raw[start..end], &raw[body..end]))
}

/// Walks the top-level fields, merging samples; `None` when anything is wrong.
fn merged(raw: &[u8]) -> Option<Profile> {
    // Pass 1: the string indices of pprof's diff-base label, if the table has them.
    let (mut base_key, mut base_val) = (None, None);
    let mut n_strings = 0i64;
    for f in fields(raw) {
        let (tag, wire, _, body) = f?;
        if tag == 6 && wire == 2 {
            if body == DIFF_BASE_LABEL.0.as_bytes() && base_key.is_none() {
                base_key = Some(n_strings);
            }
            if body == DIFF_BASE_LABEL.1.as_bytes() && base_val.is_none() {
                base_val = Some(n_strings);
            }
            n_strings += 1;
        }
    }
    // Pass 2: samples merged by (stack, signs, base); the rest decoded by prost.
    let mut rest = Vec::with_capacity(raw.len() / 8);
    let mut g = Groups::default();
    let (mut scratch, mut vals) = (Vec::new(), Vec::new());
    for f in fields(raw) {
        let (tag, wire, whole, body) = f?;
        if tag != 2 || wire != 2 {
            rest.extend_from_slice(whole);
            continue;
        }
        // Anything unusual: the full prost decoder and validation decide (and say what
        // is wrong, and where).
        let (locs, base) =
            read_sample(body, &mut scratch, &mut vals, (base_key, base_val), n_strings)?;
        g.add(locs.unwrap_or(&scratch), &vals, base)?;
    }
    let label = |base: bool| match (base, base_key, base_val) {
        (true, Some(key), Some(str)) => vec![Label {
            key,
            str,
            num: 0,
            num_unit: 0,
        }],
        _ => Vec::new(),
    };
    let samples: Vec<Sample> = (0..g.recs.len())
        .map(|k| {
            let (ids, vals, base) = g.group(k);
            Sample {
                location_id: ids.to_vec(),
                value: vals.collect(),
                label: label(base),
            }
        })
        .collect();
    drop(g);
    let mut p = Profile::decode(rest.as_slice()).ok()?;
    drop(rest);
    p.sample = samples;
    // Invalid: the full decode reports it with the file's own sample indices.
    p.check_valid().ok().map(|()| p)
}

/// Reads one `Sample` message: its values into `vals`, and its location ids as raw
/// varint bytes, returned as a slice of `b` when they are one field (the usual packed
/// case), else concatenated into `scratch` (returned as `None`). Also returns whether
/// the sample carries the diff-base label. `None` when malformed.
/// Label string indices must be in the table (`n_strings`), as validation requires.
fn read_sample<'a>(
    b: &'a [u8],
    scratch: &mut Vec<u8>,
    vals: &mut Vec<i64>,
    base: (Option<i64>, Option<i64>),
    n_strings: i64,
) -> Option<(Option<&'a [u8]>, bool)> {
    vals.clear();
    // Location fields seen: 0, 1 (in `one`), or more (concatenated in `scratch`).
    let mut one: Option<&'a [u8]> = None;
    let mut many = false;
    let mut is_base = false;
    let mut pos = 0;
    while pos < b.len() {
        let (tag, wire, _, body) = field(b, &mut pos)?;
        match (tag, wire) {
            // A varint field's body is the varint's bytes, and packed varints
            // concatenate: either way the bytes are appended as they are.
            (1, 0 | 2) => {
                if many {
                    scratch.extend_from_slice(body);
                } else if let Some(first) = one {
                    scratch.clear();
                    scratch.extend_from_slice(first);
                    scratch.extend_from_slice(body);
                    many = true;
                } else {
                    one = Some(body);
                }
            }
            (2, 0) => vals.push(varint(body, &mut 0)? as i64),
            (2, 2) => {
                let mut p = 0;
                while p < body.len() {
                    vals.push(varint(body, &mut p)? as i64);
                }
            }
            (3, 2) => {
                let (mut key, mut str) = (0i64, 0i64);
                let mut p = 0;
                while p < body.len() {
                    let (t, w, _, v) = field(body, &mut p)?;
                    if (1..=4).contains(&t) {
                        if w != 0 {
                            return None;
                        }
                        let x = varint(v, &mut 0)? as i64;
                        if t != 3 && !(0..n_strings).contains(&x) {
                            return None;
                        }
                        match t {
                            1 => key = x,
                            2 => str = x,
                            _ => {}
                        }
                    }
                }
                if (Some(key), Some(str)) == base {
                    is_base = true;
                }
            }
            (1..=3, _) => return None,
            _ => {} // unknown field: skipped, as protobuf requires
        }
    }
    if !many {
        scratch.clear();
        if one.is_none() {
            one = Some(&[]);
        }
    }
    Some((if many { None } else { one }, is_base))
}

#[inline(always)]
fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    // A plain loop: iterator adapters are not inlined in the size-optimized wasm build.
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *b.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None; // overflows 64 bits (prost rejects it too)
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// FxHash (rustc's hasher) with a final mix: keys are ids and stacks of ids, where
/// SipHash would dominate the cost.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        // Fold the high bits down: hashbrown picks buckets from the low bits, and a
        // multiply only carries information upwards.
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        for &b in chunks.remainder() {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
}
