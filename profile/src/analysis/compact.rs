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
//! Fields are read as the whole-file decoder reads them (`profile::read`): a `Sample`
//! into reused buffers, looked up by slice, so a repeated stack costs no allocation;
//! every other field merged by prost once the stream has ended (until then its bytes
//! are kept as they came, so a file of millions of empty locations is refused by the
//! entry budget before a single `Location` is made). Anything unusual makes the
//! streaming decoder give up (`None`), and [`decode_compact`] then runs the whole-file
//! decoder and validation for the error message, with the file's own sample indices.

use super::index::FxMap;
use crate::limits::{Budget, Limits};
use crate::profile::{
    self, Label, Profile, ProfileError, Sample, SampleReader, Scan, Stack, DIFF_BASE_LABEL, SAMPLE,
};
use pprof_scan::{field, field_len, Groups};

#[cfg(not(target_arch = "wasm32"))]
use pprof_scan::Batch;

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

/// [`decode_compact`] within `limits`: each field is scanned against them as the
/// decoder takes it, with the scan [`profile::decode_limited`] runs over the whole
/// input first, so the errors and limits are the same.
pub fn decode_compact_limited(bytes: &[u8], limits: &Limits) -> Result<Profile, ProfileError> {
    decode_compact_sized(bytes, limits, bytes.len() as u64)
}

/// [`decode_compact_limited`] with the entry budget of a file of `input_len` bytes:
/// for bytes inflated outside (the browser's inflater), which must be held to the
/// budget of the gzipped file as given, as the CLI holds them.
pub fn decode_compact_sized(
    bytes: &[u8],
    limits: &Limits,
    input_len: u64,
) -> Result<Profile, ProfileError> {
    if bytes.is_empty() {
        return Err(ProfileError::Empty);
    }
    // One pass: the decoder scans each field against the limits as it takes it (the
    // scan the whole-file decoder runs first, and the same errors), and a gzipped
    // input is inflated piece by piece into it, never held whole.
    let mut d = CompactDecoder::with_limits(limits, input_len);
    // (Natively a large input's samples are merged on a thread of their own.)
    #[cfg(not(target_arch = "wasm32"))]
    if bytes.len() >= MERGE_BESIDE_FROM {
        d = d.merging_beside();
    }
    if profile::is_gzip(bytes) {
        d = d.inflated();
        // (Natively the inflating runs on a thread beside the decoding.)
        #[cfg(feature = "gzip")]
        profile::inflate_beside(bytes, limits.inflated_cap(), &mut |piece| d.feed(piece))?;
        #[cfg(not(feature = "gzip"))]
        profile::inflate_each(bytes, limits.inflated_cap(), &mut |piece| d.feed(piece))?;
    } else {
        // Fed in pieces, as a stream would be (see the crate docs on wasm).
        for chunk in bytes.chunks(1 << 20) {
            if !d.feed(chunk) {
                break;
            }
        }
    }
    match d.finish() {
        Ok(p) => Ok(p),
        Err(Some(e)) => Err(e),
        // Anything else wrong: the whole-file decoder and validation say what, and
        // where (the input scanned, inflated and read again: only for a bad file or an
        // unusual encoding of a good one).
        Err(None) => {
            let p = profile::read_whole(&profile::scanned_as(bytes, limits, input_len)?)?;
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
/// `feed` returns `false` as soon as anything is unusual (malformed, truncated, over a
/// limit, invalid). What the scan can name (the wire format, a limit, a truncated end,
/// an inflated stream past its cap) `finish` returns as the same error the whole-file
/// decoder gives, found without reading further; only what the scan cannot name
/// (`Err(None)`: an invalid profile, whose sample indices the merge has changed) needs
/// the whole file decoded again by [`decode_compact`] for the message.
pub struct CompactDecoder {
    /// Checks each top-level field (wire format, limits) before it is used.
    scan: Scan,
    /// Bytes of the stream consumed before `carry` (offsets in scan errors).
    offset: usize,
    /// The start of a top-level field that continues in the next piece.
    carry: Vec<u8>,
    /// Every top-level field but samples, as it came, for prost at the end: held as
    /// bytes (2 for an empty location) rather than structs (56), so that the entry
    /// budget, counted as the fields arrive, stops an amplifying file before it
    /// costs memory.
    rest: Vec<u8>,
    groups: Groups,
    /// Natively, for a large input: the thread the samples are merged on instead.
    #[cfg(not(target_arch = "wasm32"))]
    beside: Option<MergeBeside>,
    samples: SampleReader,
    /// Reused per sample: its string labels.
    pairs: Vec<(i64, i64)>,
    /// Distinct sets of string labels `(key, str)`; id 0 is "none".
    label_sets: Vec<Vec<(i64, i64)>>,
    /// Each set spelled as words, for lookup (the profile builder's map type).
    label_ids: FxMap<Vec<u64>, u64>,
    label_key: Vec<u64>,
    /// Largest string index a label refers to (checked against the table at the end).
    max_label_str: i64,
    failed: bool,
    /// What stopped the decoder, when the scan could say.
    error: Option<ProfileError>,
    /// The most bytes the stream may hold (an inflated stream's cap): a field declared
    /// past it is refused before its bytes are gathered.
    max_len: Option<usize>,
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
            #[cfg(not(target_arch = "wasm32"))]
            beside: None,
            samples: SampleReader::default(),
            pairs: Vec::new(),
            label_sets: vec![Vec::new()],
            label_ids: FxMap::default(),
            label_key: Vec::new(),
            max_label_str: 0,
            failed: false,
            error: None,
            max_len: None,
        }
    }

    /// Merges the samples on a thread of its own ([`MergeBeside`]) while this one
    /// reads them (before any is fed); here, as they are read, where no thread can
    /// start.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn merging_beside(mut self) -> Self {
        // (Only before any field: samples fed before it are in `groups`' batch.)
        if self.offset == 0 && self.carry.is_empty() && self.beside.is_none() {
            self.beside = MergeBeside::start();
        }
        self
    }

    /// The stream is inflated gzip: offsets in errors say so, and a field that would
    /// take the stream past `limits.inflated_size` is refused as soon as its length is
    /// read (a gzip bomb of one huge field never gets its bytes gathered).
    pub fn inflated(mut self) -> Self {
        self.scan.set_inflated();
        self.max_len = Some(self.scan.limits().inflated_cap());
        self
    }

    /// Stops decoding at the field that starts at `bytes` (the stream's `self.offset`)
    /// and may continue past them: `known`, or what the scan names there when the field
    /// is wrong whatever follows (the same scan the whole-file decoder runs, so the
    /// same error).
    #[cold]
    fn fail(&mut self, bytes: &[u8], known: Option<ProfileError>) {
        self.failed = true;
        if self.error.is_none() {
            self.error = known.or_else(|| self.scan.field_starting(bytes, self.offset).err());
        }
    }

    /// Feeds the next piece of the file; `false` once the input cannot be decoded here.
    pub fn feed(&mut self, mut chunk: &[u8]) -> bool {
        // First complete a field carried over from the previous piece.
        while !self.failed && !self.carry.is_empty() && !chunk.is_empty() {
            let take = match checked_len(&self.carry, self.offset, self.max_len) {
                Err(e) => {
                    let carry = std::mem::take(&mut self.carry);
                    self.fail(&carry, e);
                    self.carry = carry;
                    break;
                }
                // Header still incomplete: a key and a length are at most 20 bytes.
                Ok(None) => chunk.len().min(20),
                Ok(Some(total)) => (total - self.carry.len()).min(chunk.len()),
            };
            self.carry.extend_from_slice(&chunk[..take]);
            match checked_len(&self.carry, self.offset, self.max_len) {
                Ok(Some(total)) if total <= self.carry.len() => {
                    // Complete; bytes past its end (taken with a header) go back.
                    let extra = self.carry.len() - total;
                    chunk = &chunk[take - extra..];
                    self.carry.truncate(total);
                    let carry = std::mem::take(&mut self.carry);
                    self.field(&carry);
                    self.offset += carry.len();
                    self.carry = carry;
                    self.carry.clear();
                }
                Err(e) => {
                    let carry = std::mem::take(&mut self.carry);
                    self.fail(&carry, e);
                    self.carry = carry;
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
            match checked_len(&chunk[pos..], self.offset, self.max_len) {
                Err(e) => {
                    self.fail(&chunk[pos..], e);
                    return false;
                }
                Ok(Some(n)) if n <= chunk.len() - pos => {
                    if !self.field(&chunk[pos..pos + n]) {
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

    /// One whole top-level field: a sample is summed into its group, anything else
    /// kept for the end. `false` (and the decoder stopped) when it cannot be used.
    fn field(&mut self, whole: &[u8]) -> bool {
        let used = self.use_field(whole);
        self.failed |= !used;
        used
    }

    fn use_field(&mut self, whole: &[u8]) -> bool {
        if let Err(e) = self.scan.field_at(whole, self.offset) {
            self.error = Some(e);
            return false;
        }
        let mut pos = 0;
        let Some((tag, wire, _, body)) = field(whole, &mut pos) else {
            return false;
        };
        if (tag, wire) != (SAMPLE, 2) {
            self.rest.extend_from_slice(whole);
            return true;
        }
        let Some(sample) = self.samples.read(body) else {
            return false;
        };
        // String labels only (numeric ones dropped: see the module docs), each string
        // in the table (checked at the end), as validation requires.
        self.pairs.clear();
        for &[key, str, _, num_unit] in sample.labels {
            if key.min(str).min(num_unit) < 0 {
                return false;
            }
            self.max_label_str = self.max_label_str.max(key).max(str).max(num_unit);
            if str != 0 {
                self.pairs.push((key, str));
            }
        }
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
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(t) = &mut self.beside {
            return t.add(sample.locs, sample.vals, set).is_some();
        }
        self.groups.add(sample.locs, sample.vals, set).is_some()
    }

    /// The merged, validated profile. `Err(Some(e))`: what the scan found wrong (the
    /// whole-file decoder's error); `Err(None)`: something only the whole-file decoder
    /// explains (see [`CompactDecoder`]).
    pub fn finish(self) -> Result<Profile, Option<ProfileError>> {
        self.finishing()?.finish()
    }

    /// [`CompactDecoder::finish`] a slice of samples at a time ([`Finishing::step`]):
    /// the tables decoded, no sample built yet.
    pub fn finishing(mut self) -> Result<Finishing, Option<ProfileError>> {
        if !self.failed && !self.carry.is_empty() {
            // The input ended inside a field: the scan says where.
            self.failed = true;
            self.error = self.scan.field_at(&self.carry, self.offset).err();
        }
        if self.failed {
            return Err(self.error);
        }
        let mut g = self.groups;
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(t) = self.beside {
            g = t.finish().ok_or(None)?;
        }
        g.flush().ok_or(None)?;
        let mut p = Profile::default();
        profile::merge_field(&mut p, &self.rest).map_err(|_| None)?;
        drop(self.rest);
        // (The samples are all in the groups.)
        p.sample = Vec::with_capacity(g.len());
        if self.max_label_str >= p.string_table.len() as i64 {
            return Err(None); // a dangling label string: validation reports it
        }
        // pprof's diff-base label, by the first occurrence of its strings.
        let find = |s: &str| p.string_table.iter().position(|t| t == s).map(|i| i as i64);
        let base = find(DIFF_BASE_LABEL.0).zip(find(DIFF_BASE_LABEL.1));
        let is_base: Vec<bool> = self
            .label_sets
            .iter()
            .map(|set| base.is_some_and(|b| set.contains(&b)))
            .collect();
        Ok(Finishing {
            p,
            g,
            base,
            is_base,
            ids: Vec::new(),
            values_known: true,
        })
    }
}

/// A profile decoded but for its merged samples, which are built a slice at a time, so
/// that a caller with an event loop to serve (the viewer) can let it run between
/// slices: [`CompactDecoder::finish`] builds them all in one go.
pub struct Finishing {
    /// The profile, its samples so far.
    p: Profile,
    g: Groups,
    /// The diff-base label's key and value strings, if the profile has them.
    base: Option<(i64, i64)>,
    /// Per label set: does it hold the diff-base label?
    is_base: Vec<bool>,
    /// One sample's location ids (varints), reused.
    ids: Vec<u8>,
    /// Every sample built so far has one value per sample type.
    values_known: bool,
}

impl Finishing {
    /// Builds the next `n` merged samples (at most): true when all are built. From the
    /// last group back, each slice's groups dropped once built (see
    /// [`Groups::truncate`]); [`Finishing::finish`] puts the samples in order.
    pub fn step(&mut self, n: usize) -> bool {
        let left = self.g.len();
        let stop = left.saturating_sub(n);
        let want = self.p.sample_type.len();
        for k in (stop..left).rev() {
            let s = merged(&self.g, k, self.base, &self.is_base, &mut self.ids);
            self.values_known &= s.value.len() == want;
            self.p.sample.push(s);
        }
        self.g.truncate(stop);
        stop == 0
    }

    /// [`Finishing::step`] with the slice's two halves built on two threads (the CLI).
    #[cfg(not(target_arch = "wasm32"))]
    fn step_beside(&mut self, n: usize) -> bool {
        let left = self.g.len();
        let stop = left.saturating_sub(n);
        let mid = stop + (left - stop) / 2;
        let (g, base, is_base) = (&self.g, self.base, &self.is_base);
        let build = |ks: std::ops::Range<usize>| -> Vec<Sample> {
            let mut ids = Vec::new();
            let samples = ks.rev().map(|k| merged(g, k, base, is_base, &mut ids));
            samples.collect()
        };
        let (high, low) =
            crate::beside::beside(left - stop, || build(mid..left), || build(stop..mid));
        let want = self.p.sample_type.len();
        self.values_known &= high.iter().chain(&low).all(|s| s.value.len() == want);
        self.p.sample.extend(high);
        self.p.sample.extend(low);
        self.g.truncate(stop);
        stop == 0
    }

    /// The merged, validated profile, with the samples not yet built built in one go
    /// (errors as [`CompactDecoder::finish`]).
    pub fn finish(mut self) -> Result<Profile, Option<ProfileError>> {
        // Every stack is valid when its location ids lie in 1..=n of a profile whose
        // locations are the ids 1..=n (n distinct non-zero ids, none past n: the
        // validation below checks those), as every producer we know writes them; and
        // every value count when each is one per sample type ([`merged`] checks them
        // as it builds). Else each sample is checked.
        let n = self.p.location.len() as u64;
        let ids_known = self.g.ids_below(n) && self.p.location.iter().all(|l| l.id <= n);
        // In slices too, so that the groups' memory goes as the samples' comes. Natively
        // 32k groups a slice: each slice's samples are held twice (its two halves'
        // `Vec`s, then the profile's) until its groups go, so `heapsnap top` on the 5 MB
        // Go heap profile peaked at 86 MB with slices of 128k, 78 with 64k and 76.5
        // with 32k (16k: no less, and a thread started per slice).
        #[cfg(not(target_arch = "wasm32"))]
        while !self.step_beside(1 << 15) {}
        #[cfg(target_arch = "wasm32")]
        while !self.step(1 << 16) {}
        drop(self.g);
        // Built from the last group back: in the file's order again.
        self.p.sample.reverse();
        // Invalid: the full decode reports it with the file's own sample indices.
        let known = ids_known && self.values_known;
        self.p.check_valid_with(!known).map_err(|_| None)?;
        Ok(self.p)
    }
}

/// Group `k` as the sample it stands for: its stack's varints as they are (a `Stack`
/// is varints too), through `ids`, so that the stack is sized exactly; the diff-base
/// label where its label set has it.
fn merged(
    g: &Groups,
    k: usize,
    base: Option<(i64, i64)>,
    is_base: &[bool],
    ids: &mut Vec<u8>,
) -> Sample {
    let (stack, vals, set) = g.group(k);
    ids.clear();
    stack.varints(ids);
    Sample {
        location_id: Stack::from_varints(ids),
        value: vals.collect(),
        label: match base {
            Some((key, str)) if is_base[set as usize] => vec![Label {
                key,
                str,
                num: 0,
                num_unit: 0,
            }]
            .into(),
            _ => Vec::new().into(),
        },
    }
}

/// Natively, inputs from this size on ([`decode_compact_sized`]'s, as given) have their
/// samples merged on a thread of their own.
#[cfg(not(target_arch = "wasm32"))]
const MERGE_BESIDE_FROM: usize = 1 << 20;

/// Samples merged on a thread of their own, sent to it a [`Batch`] of
/// [`MergeBeside::SEND`] at a time (the batches come back to be filled again). The
/// reading of a large profile (its fields scanned, samples read and hashed) and the
/// merging (a lookup in a table of millions of groups, a cache miss each) then share
/// the two cores with the inflater: `heapsnap top` on a 30 MB Go heap profile, the
/// decoding 1.12 → 0.97 s (and the whole command 1.24 → 1.07 s).
#[cfg(not(target_arch = "wasm32"))]
struct MergeBeside {
    batch: Batch,
    /// (Taken by `finish`, or on drop: the thread then ends.)
    to: Option<std::sync::mpsc::SyncSender<Batch>>,
    back: std::sync::mpsc::Receiver<Batch>,
    merged: Option<std::thread::JoinHandle<Option<Groups>>>,
}

#[cfg(not(target_arch = "wasm32"))]
impl MergeBeside {
    /// Samples a batch: enough that handing it over is rare, few enough that a batch
    /// is a few hundred KiB; and at most [`MergeBeside::SEND_BYTES`] of stacks (deep
    /// ones), so that its offsets stay far from 32 bits.
    const SEND: usize = 1 << 12;
    const SEND_BYTES: usize = 1 << 20;

    /// The merging thread, or `None` when none can start.
    fn start() -> Option<Self> {
        use std::sync::mpsc::sync_channel;
        let (to, from) = sync_channel::<Batch>(2);
        let (back_to, back) = sync_channel::<Batch>(4);
        let merged = std::thread::Builder::new()
            .name("heapsnap merge".into())
            .spawn(move || {
                let mut g = Groups::default();
                for mut b in from {
                    g.merge(&mut b)?;
                    let _ = back_to.try_send(b);
                }
                Some(g)
            })
            .ok()?;
        Some(MergeBeside {
            batch: Batch::default(),
            to: Some(to),
            back,
            merged: Some(merged),
        })
    }

    #[inline]
    fn add(&mut self, locs: &[u8], vals: &[i64], set: u32) -> Option<()> {
        self.batch.push(locs, vals, set)?;
        if self.batch.len() >= Self::SEND || self.batch.bytes() >= Self::SEND_BYTES {
            self.send()?;
        }
        Some(())
    }

    /// Hands the batch over; `None` when the thread has stopped (a sample it could
    /// not merge).
    #[inline(never)]
    fn send(&mut self) -> Option<()> {
        let next = self.back.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.batch, next);
        self.to.as_ref()?.send(full).ok()
    }

    /// The groups, every sample merged; `None` when one could not be. A panic on the
    /// merging thread is raised again here.
    fn finish(mut self) -> Option<Groups> {
        let sent = self.batch.is_empty() || self.send().is_some();
        let g = self.join()?;
        sent.then_some(g)
    }

    /// Ends the thread (its batches are all merged first) and takes its groups.
    fn join(&mut self) -> Option<Groups> {
        drop(self.to.take());
        match self.merged.take()?.join() {
            Ok(g) => g,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// A decoder dropped before its end (a bad input, whose whole-file decode for the
/// message comes next) lets go of the thread's groups first.
#[cfg(not(target_arch = "wasm32"))]
impl Drop for MergeBeside {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            drop(self.join());
        }
    }
}

/// The length of the top-level field starting at `b` (at `offset` of the stream):
/// `Ok(None)` while its header is incomplete; `Err(None)` when malformed (the scan
/// names it); `Err(Some(TooLarge))` when it would take the stream past `max_len`.
fn checked_len(
    b: &[u8],
    offset: usize,
    max_len: Option<usize>,
) -> Result<Option<usize>, Option<ProfileError>> {
    match (field_len(b), max_len) {
        (Err(_), _) => Err(None),
        (Ok(Some(n)), Some(cap)) if offset.saturating_add(n) > cap => {
            Err(Some(ProfileError::TooLarge { limit: cap }))
        }
        (Ok(n), _) => Ok(n),
    }
}
