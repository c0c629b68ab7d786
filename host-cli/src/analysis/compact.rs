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

/// Sample groups being merged, in flat arenas (a million small Vecs would be slow to
/// build and scattered in memory). A group is keyed by the *raw bytes* of its samples'
/// location ids (packed varints as written), so a repeated stack is hashed and compared
/// as a few machine words and its ids are decoded only once, when its group is made.
/// Equal bytes mean equal stacks; equal stacks written differently (non-canonical
/// varints, packed vs not) merely stay in separate groups, which changes no figure.
#[derive(Default)]
struct Groups {
    /// Hash of the key → the latest group with it; `next` chains equal hashes.
    map: HashMap<u64, u32, BuildHasherDefault<Fx>>,
    next: Vec<u32>,
    /// Per group: (start, len) of its key bytes in `keys`, and its (value sign mask,
    /// diff-base label, value count): samples merge only when all of these agree.
    key_at: Vec<(u32, u32)>,
    keys: Vec<u8>,
    meta: Vec<(u64, bool, u32)>,
    /// Per group: start of its values in `vals`, and of its decoded ids in `ids`.
    vals_at: Vec<u32>,
    vals: Vec<i64>,
    ids_at: Vec<(u32, u32)>,
    ids: Vec<u64>,
}

impl Groups {
    /// Adds a sample (its location-id bytes, values and diff-base flag): summed into
    /// the group with the same key, else a new group. `None` when the location bytes
    /// are not valid varints.
    fn add(&mut self, locs: &[u8], vals: &[i64], base: bool) -> Option<()> {
        let mut signs = 0u64;
        let mut k = 0;
        while k < vals.len() && k < 64 {
            signs |= u64::from(vals[k] < 0) << k;
            k += 1;
        }
        let meta = (signs, base, vals.len() as u32);
        let hash = hash_bytes(locs, signs ^ (u64::from(base) << 63) ^ (vals.len() as u64) << 40);
        let head = self.map.get(&hash).copied();
        let mut g = head.unwrap_or(u32::MAX);
        while g != u32::MAX {
            let (ks, kn) = self.key_at[g as usize];
            if self.meta[g as usize] == meta
                && same_bytes(&self.keys[ks as usize..(ks + kn) as usize], locs)
            {
                let vs = self.vals_at[g as usize] as usize;
                for (a, b) in self.vals[vs..vs + vals.len()].iter_mut().zip(vals) {
                    *a = a.wrapping_add(*b);
                }
                return Some(());
            }
            g = self.next[g as usize];
        }
        let id = self.meta.len() as u32;
        let is = self.ids.len();
        let mut p = 0;
        while p < locs.len() {
            self.ids.push(varint(locs, &mut p)?);
        }
        self.ids_at.push((is as u32, (self.ids.len() - is) as u32));
        self.key_at.push((self.keys.len() as u32, locs.len() as u32));
        self.keys.extend_from_slice(locs);
        self.meta.push(meta);
        self.vals_at.push(self.vals.len() as u32);
        self.vals.extend_from_slice(vals);
        self.next.push(head.unwrap_or(u32::MAX));
        self.map.insert(hash, id);
        Some(())
    }
}

/// FxHash of a byte string, eight bytes at a time, seeded.
#[inline(always)]
fn hash_bytes(b: &[u8], seed: u64) -> u64 {
    let mut h = Fx(seed);
    let mut i = 0;
    while i + 8 <= b.len() {
        h.write_u64(u64::from_le_bytes([
            b[i],
            b[i + 1],
            b[i + 2],
            b[i + 3],
            b[i + 4],
            b[i + 5],
            b[i + 6],
            b[i + 7],
        ]));
        i += 8;
    }
    let mut tail = b.len() as u64;
    while i < b.len() {
        tail = tail << 8 | u64::from(b[i]);
        i += 1;
    }
    h.write_u64(tail);
    h.finish()
}

/// Byte-string equality eight bytes at a time (`==` on slices becomes `memcmp`, a byte
/// loop on wasm32).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i + 8 <= a.len() {
        let x = u64::from_le_bytes([a[i], a[i + 1], a[i + 2], a[i + 3], a[i + 4], a[i + 5], a[i + 6], a[i + 7]]);
        let y = u64::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]]);
        if x != y {
            return false;
        }
        i += 8;
    }
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
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
    let samples: Vec<Sample> = (0..g.meta.len())
        .map(|k| {
            let (is, n) = g.ids_at[k];
            let (_, base, vn) = g.meta[k];
            let vs = g.vals_at[k] as usize;
            Sample {
                location_id: g.ids[is as usize..(is + n) as usize].to_vec(),
                value: g.vals[vs..vs + vn as usize].to_vec(),
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
