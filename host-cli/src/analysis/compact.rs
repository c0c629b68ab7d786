//! Decoding a large profile for viewing: samples are merged by stack while they are
//! read, so a 500k-sample file never exists as 500k `Sample` structs in memory.
//!
//! Every view of the viewer (top, flame, source, diff) is a sum over samples, and so
//! unchanged by merging samples with the same stack; the merged result is an ordinary
//! validated [`Profile`]. Labels are dropped except pprof's diff-base label (which
//! changes how percentages are computed), so samples that differ only in labels merge.

use crate::profile::{self, Label, Profile, ProfileError, Sample, DIFF_BASE_LABEL};
use prost::Message;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Decodes pprof bytes (gzipped or raw) into a validated profile whose samples are
/// merged by (stack, diff-base label). Same errors as [`profile::decode`].
pub fn decode_compact(bytes: &[u8]) -> Result<Profile, ProfileError> {
    if bytes.is_empty() {
        return Err(ProfileError::Empty);
    }
    let inflated;
    let raw: &[u8] = if profile::is_gzip(bytes) {
        inflated = profile::inflate(bytes, profile::DEFAULT_MAX_INFLATED)?;
        &inflated
    } else {
        bytes
    };
    match merged(raw) {
        Some(r) => r,
        // Broken framing: let prost describe what is wrong (and where).
        None => profile::decode(raw),
    }
}

/// Walks the top-level fields, merging samples; `None` when the framing is broken.
fn merged(raw: &[u8]) -> Option<Result<Profile, ProfileError>> {
    let mut rest = Vec::with_capacity(raw.len() / 8);
    let mut samples: Vec<Sample> = Vec::new();
    // (stack, is base, value count) → sample index.
    let mut index: HashMap<(Box<[u64]>, bool), usize, BuildHasherDefault<Fx>> = HashMap::default();
    let mut base_labels: Vec<Sample> = Vec::new();
    let mut pos = 0usize;
    while pos < raw.len() {
        let start = pos;
        let key = varint(raw, &mut pos)?;
        let (tag, wire) = (key >> 3, key & 7);
        let end = match wire {
            0 => {
                varint(raw, &mut pos)?;
                pos
            }
            1 => pos + 8,
            2 => {
                let n = varint(raw, &mut pos)?;
                pos.checked_add(usize::try_from(n).ok()?)?
            }
            5 => pos + 4,
            _ => return None,
        };
        if end > raw.len() || tag == 0 {
            return None;
        }
        if tag == 2 && wire == 2 {
            let s = match Sample::decode(&raw[pos..end]) {
                Ok(s) => s,
                Err(e) => return Some(Err(e.into())),
            };
            // Which samples carry the base label can only be known with the string
            // table, which may come later: keep labelled samples apart until then.
            if !s.label.is_empty() {
                base_labels.push(s);
            } else {
                add(&mut samples, &mut index, s, false);
            }
        } else {
            rest.extend_from_slice(&raw[start..end]);
        }
        pos = end;
    }
    let mut p = match Profile::decode(rest.as_slice()) {
        Ok(p) => p,
        Err(e) => return Some(Err(e.into())),
    };
    drop(rest);
    let k = p
        .string_table
        .iter()
        .position(|s| s == DIFF_BASE_LABEL.0)
        .map(|i| i as i64);
    let v = p
        .string_table
        .iter()
        .position(|s| s == DIFF_BASE_LABEL.1)
        .map(|i| i as i64);
    for mut s in base_labels {
        let is_base = matches!((k, v), (Some(k), Some(v)) if s.label.iter().any(|l| l.key == k && l.str == v));
        s.label.clear();
        if is_base {
            if let (Some(key), Some(str)) = (k, v) {
                s.label.push(Label {
                    key,
                    str,
                    num: 0,
                    num_unit: 0,
                });
            }
        }
        add(&mut samples, &mut index, s, is_base);
    }
    p.sample = samples;
    Some(p.check_valid().map(|()| p).map_err(Into::into))
}

fn add(
    samples: &mut Vec<Sample>,
    index: &mut HashMap<(Box<[u64]>, bool), usize, BuildHasherDefault<Fx>>,
    mut s: Sample,
    base: bool,
) {
    let key = (std::mem::take(&mut s.location_id).into_boxed_slice(), base);
    if let Some(&i) = index.get(&key) {
        let into = &mut samples[i];
        if into.value.len() == s.value.len() {
            for (a, b) in into.value.iter_mut().zip(&s.value) {
                *a = a.wrapping_add(*b);
            }
            return;
        }
        // Differing value counts: keep apart so validation reports it.
        s.location_id = key.0.into_vec();
        samples.push(s);
        return;
    }
    s.location_id = key.0.to_vec();
    index.insert(key, samples.len());
    samples.push(s);
}

fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

/// FxHash (rustc's hasher): stacks are trusted-size keys and SipHash would dominate.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
}
