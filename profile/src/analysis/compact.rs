//! Decoding a large profile for viewing: samples are merged by stack while they are
//! read, so a 500k-sample file never exists as 500k `Sample` structs in memory, and
//! the bytes can be fed as they arrive (a browser stream, an inflater's output), so the
//! whole file need not be in memory either.
//!
//! Every view of the viewer (top, flame, source, diff) is a sum over samples, and so
//! unchanged by merging samples with the same stack; the merged result is an ordinary
//! validated [`Profile`]. Numeric labels are dropped (Go's `bytes` label: one sample per
//! object size), so samples that differ only in them merge; string labels are kept
//! apart only as far as pprof's diff-base label (`pprof::base=true`, which changes how
//! percentages are computed) needs; samples whose values differ in sign stay apart
//! (pprof's total sums absolute values).
//!
//! Only the `Sample` messages are read by hand (into reused buffers, looked up by
//! slice, so a repeated stack costs no allocation); everything else goes through prost.
//! Anything unusual makes the streaming decoder give up (`None`), and
//! [`decode_compact`] then runs prost's full decoder and validation for the error
//! message, with the file's own sample indices.

use super::index::FxMap;
use crate::limits::{Budget, Limits};
use crate::profile::{self, Label, Profile, ProfileError, Sample, Scan, DIFF_BASE_LABEL};
use pprof_scan::{field, field_len, read_sample, Groups};
use prost::Message;

/// Decodes pprof bytes (gzipped or raw) into a validated profile whose samples are
/// merged by (stack, diff-base label), within the default [`Limits`]. Same errors as
/// [`profile::decode`].
pub fn decode_compact(bytes: &[u8]) -> Result<Profile, ProfileError> {
    decode_compact_limited(bytes, &Limits::default())
}

/// [`decode_compact`] with an explicit cap on the inflated size.
pub fn decode_compact_with_limit(
    bytes: &[u8],
    max_inflated: usize,
) -> Result<Profile, ProfileError> {
    decode_compact_limited(
        bytes,
        &Limits {
            inflated_size: max_inflated as u64,
            ..Limits::default()
        },
    )
}

/// [`decode_compact`] within `limits`: the bytes are scanned first, as by
/// [`profile::decode_limited`], so the errors and limits are the same.
pub fn decode_compact_limited(bytes: &[u8], limits: &Limits) -> Result<Profile, ProfileError> {
    let raw = profile::scanned(bytes, limits)?;
    let mut d = CompactDecoder::with_limits(&Limits::unlimited(), 0);
    // Fed in pieces, as a stream would be (see the crate docs on wasm).
    for chunk in raw.chunks(1 << 20) {
        if !d.feed(chunk) {
            break;
        }
    }
    match d.finish() {
        Some(p) => Ok(p),
        // Anything wrong: the full decoder and validation say what, and where.
        // (`raw` is already inflated and scanned.)
        None => {
            let p = Profile::decode(profile::lossy_strings(&raw).as_ref())?;
            p.check_valid()?;
            Ok(p)
        }
    }
}

/// The streaming form of [`decode_compact`]: raw (inflated) pprof bytes are fed in
/// pieces of any size as they arrive; only an incomplete top-level field is carried
/// between pieces. Each top-level field is scanned against the limits before it is
/// used, so an amplifying stream stops early.
///
/// `feed` returns `false` and `finish` `None` as soon as anything is unusual
/// (malformed, truncated, invalid); the caller then decodes the whole file with
/// [`decode_compact`] to tell the user what is wrong and where.
pub struct CompactDecoder {
    /// Checks each top-level field (wire format, limits) before it is used.
    scan: Scan,
    /// Bytes of the stream consumed before `carry` (offsets in scan errors).
    offset: usize,
    /// The start of a top-level field that continues in the next piece.
    carry: Vec<u8>,
    /// Every top-level field but samples, for prost.
    rest: Vec<u8>,
    groups: Groups,
    /// Reused per sample: its location bytes (when in several fields), values, string
    /// labels.
    scratch: Vec<u8>,
    vals: Vec<i64>,
    pairs: Vec<(i64, i64)>,
    /// Distinct sets of string labels `(key, str)`; id 0 is "none".
    label_sets: Vec<Vec<(i64, i64)>>,
    /// Each set spelled as words, for lookup (the profile builder's map type).
    label_ids: FxMap<Vec<u64>, u64>,
    label_key: Vec<u64>,
    /// Largest string index a label refers to (checked against the table at the end).
    max_label_str: i64,
    failed: bool,
}

impl Default for CompactDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl CompactDecoder {
    /// A decoder within the default [`Limits`] for a file of unknown size (the
    /// entry budget is then `entries-base` alone): prefer [`Self::with_limits`].
    pub fn new() -> Self {
        Self::with_limits(&Limits::default(), 0)
    }

    /// A decoder within `limits` for a file of `input_len` bytes (as given, before
    /// inflating).
    pub fn with_limits(limits: &Limits, input_len: u64) -> Self {
        CompactDecoder {
            scan: Scan::new(Budget::new(limits, input_len), false),
            offset: 0,
            carry: Vec::new(),
            rest: Vec::new(),
            groups: Groups::default(),
            scratch: Vec::new(),
            vals: Vec::new(),
            pairs: Vec::new(),
            label_sets: vec![Vec::new()],
            label_ids: FxMap::default(),
            label_key: Vec::new(),
            max_label_str: 0,
            failed: false,
        }
    }

    /// Feeds the next piece of the file; `false` once the input cannot be decoded here.
    pub fn feed(&mut self, mut chunk: &[u8]) -> bool {
        // First complete a field carried over from the previous piece.
        while !self.failed && !self.carry.is_empty() && !chunk.is_empty() {
            let take = match field_len(&self.carry) {
                Err(_) => {
                    self.failed = true;
                    break;
                }
                // Header still incomplete: a key and a length are at most 20 bytes.
                Ok(None) => chunk.len().min(20),
                Ok(Some(total)) => (total - self.carry.len()).min(chunk.len()),
            };
            self.carry.extend_from_slice(&chunk[..take]);
            match field_len(&self.carry) {
                Ok(Some(total)) if total <= self.carry.len() => {
                    // Complete; bytes past its end (taken with a header) go back.
                    let extra = self.carry.len() - total;
                    chunk = &chunk[take - extra..];
                    self.carry.truncate(total);
                    let carry = std::mem::take(&mut self.carry);
                    self.failed |= !self.field(&carry);
                    self.offset += carry.len();
                    self.carry = carry;
                    self.carry.clear();
                }
                _ => chunk = &chunk[take..],
            }
        }
        if self.failed {
            return false;
        }
        if !self.carry.is_empty() {
            return true; // the whole piece went into the carried field
        }
        let mut pos = 0;
        while pos < chunk.len() {
            match field_len(&chunk[pos..]) {
                Err(_) => {
                    self.failed = true;
                    return false;
                }
                Ok(Some(n)) if n <= chunk.len() - pos => {
                    if !self.field(&chunk[pos..pos + n]) {
                        self.failed = true;
                        return false;
                    }
                    pos += n;
                    self.offset += n;
                }
                _ => break, // continues in the next piece
            }
        }
        self.carry.extend_from_slice(&chunk[pos..]);
        true
    }

    /// One whole top-level field: a sample is merged, anything else kept for prost.
    fn field(&mut self, whole: &[u8]) -> bool {
        if self.scan.field_at(whole, self.offset).is_err() {
            return false;
        }
        let mut pos = 0;
        let Some((tag, wire, _, body)) = field(whole, &mut pos) else {
            return false;
        };
        if tag != 2 || wire != 2 {
            self.rest.extend_from_slice(&profile::lossy_strings(whole));
            return true;
        }
        let Some((locs, max_str)) =
            read_sample(body, &mut self.scratch, &mut self.vals, &mut self.pairs)
        else {
            return false;
        };
        self.max_label_str = self.max_label_str.max(max_str);
        let set = if self.pairs.is_empty() {
            0
        } else {
            self.label_key.clear();
            for &(k, s) in &self.pairs {
                self.label_key.extend([k as u64, s as u64]);
            }
            if let Some(&id) = self.label_ids.get(self.label_key.as_slice()) {
                id as u32
            } else {
                let id = self.label_sets.len() as u32;
                self.label_sets.push(self.pairs.clone());
                self.label_ids.insert(self.label_key.clone(), u64::from(id));
                id
            }
        };
        let locs = locs.unwrap_or(&self.scratch);
        self.groups.add(locs, &self.vals, set).is_some()
    }

    /// The merged, validated profile; `None` if anything was wrong or the input ended
    /// inside a field.
    pub fn finish(self) -> Option<Profile> {
        if self.failed || !self.carry.is_empty() {
            return None;
        }
        let mut g = self.groups;
        g.flush()?;
        let mut p = Profile::decode(self.rest.as_slice()).ok()?;
        drop(self.rest);
        if self.max_label_str >= p.string_table.len() as i64 {
            return None; // a dangling label string: validation reports it
        }
        // pprof's diff-base label, by the first occurrence of its strings.
        let find = |s: &str| p.string_table.iter().position(|t| t == s).map(|i| i as i64);
        let base = match (find(DIFF_BASE_LABEL.0), find(DIFF_BASE_LABEL.1)) {
            (Some(key), Some(str)) => Some((key, str)),
            _ => None,
        };
        let is_base: Vec<bool> = self
            .label_sets
            .iter()
            .map(|set| base.is_some_and(|b| set.contains(&b)))
            .collect();
        p.sample = (0..g.len())
            .map(|k| {
                let (ids, vals, set) = g.group(k);
                Sample {
                    location_id: ids.to_vec(),
                    value: vals.collect(),
                    label: match base {
                        Some((key, str)) if is_base[set as usize] => vec![Label {
                            key,
                            str,
                            num: 0,
                            num_unit: 0,
                        }],
                        _ => Vec::new(),
                    },
                }
            })
            .collect();
        drop(g);
        // Invalid: the full decode reports it with the file's own sample indices.
        p.check_valid().ok().map(|()| p)
    }
}
