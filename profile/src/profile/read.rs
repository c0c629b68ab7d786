//! Reading a profile's fields: the one reading both decoders share, the whole-file
//! one ([`super::decode_limited`]) and the viewer's merging one
//! ([`crate::analysis::CompactDecoder`]). Each takes the (scanned) protobuf one
//! top-level field at a time: a `Sample` is read by [`pprof_scan::read_sample`] into
//! reused buffers (the merging decoder then sums it into its group, the whole-file
//! one keeps it), and every other field is merged into the profile by prost, its
//! strings made UTF-8 as pprof shows them ([`super::lossy_strings`]): by the
//! whole-file decoder as it reads them, by the merging one from its buffer of them
//! once the stream has ended.

use super::{lossy_strings, values, Label, Profile, ProfileError, Sample, Stack};

/// The top-level field number of `Profile.sample`.
pub(crate) const SAMPLE: u64 = 2;

/// Merges whole top-level fields other than samples (one, or a run of them) into
/// `p`, as prost reads them (repeated fields append, scalars replace, so field by
/// field is the same as all at once).
pub(crate) fn merge_field(p: &mut Profile, whole: &[u8]) -> Result<(), prost::DecodeError> {
    prost::Message::merge(p, lossy_strings(whole).as_ref())
}

/// Buffers reused from one sample to the next.
#[derive(Default)]
pub(crate) struct SampleReader {
    scratch: Vec<u8>,
    vals: Vec<i64>,
    labels: Vec<pprof_scan::RawLabel>,
}

/// One sample as read, borrowed from the reader's buffers and the input.
pub(crate) struct RawSample<'a> {
    /// The location ids' varint bytes, as written.
    pub locs: &'a [u8],
    pub vals: &'a [i64],
    pub labels: &'a [pprof_scan::RawLabel],
}

impl SampleReader {
    /// Reads the body of one `Sample` message; `None` when malformed (never after the
    /// scan, which checks what this reads).
    pub(crate) fn read<'a>(&'a mut self, body: &'a [u8]) -> Option<RawSample<'a>> {
        let locs =
            pprof_scan::read_sample(body, &mut self.scratch, &mut self.vals, &mut self.labels)?;
        Some(RawSample {
            locs: locs.unwrap_or(&self.scratch),
            vals: &self.vals,
            labels: &self.labels,
        })
    }
}

impl RawSample<'_> {
    /// The sample as the model holds it.
    fn to_sample(&self) -> Sample {
        // (A loop, not `map`/`collect`: one less generic copy in the wasm.)
        let mut label = Vec::with_capacity(self.labels.len());
        for &[key, str, num, num_unit] in self.labels {
            label.push(Label {
                key,
                str,
                num,
                num_unit,
            });
        }
        Sample {
            location_id: Stack::from_varints(self.locs),
            value: values(self.vals),
            label: label.into(),
        }
    }
}

/// The whole-file decoder's reading of scanned bytes (not yet validated): every
/// sample kept as written, in order.
pub(crate) fn read_whole(raw: &[u8]) -> Result<Profile, ProfileError> {
    let mut p = reserved(raw);
    let mut samples = SampleReader::default();
    let mut pos = 0;
    // Where the run of other fields not merged yet starts: merged a run at a time,
    // not a prost call per location, function and string.
    let mut run = 0;
    while pos < raw.len() {
        let start = pos;
        match pprof_scan::field(raw, &mut pos) {
            Some((SAMPLE, 2, _, body)) => {
                // (A prost error here is reported below, with the rest.)
                let merged = run == start || merge_field(&mut p, &raw[run..start]).is_ok();
                if let Some(read) = samples.read(body).filter(|_| merged) {
                    p.sample.push(read.to_sample());
                    run = pos;
                    continue;
                }
            }
            Some(_) => continue,
            None => {}
        }
        // Not after the scan, which checks everything read here: prost's word.
        merge_field(&mut p, &raw[run..])?;
        return Err(ProfileError::Wire {
            offset: start,
            inflated: false,
            path: "sample".into(),
            what: "malformed".into(),
        });
    }
    merge_field(&mut p, &raw[run..])?;
    Ok(p)
}

/// An empty profile whose tables have room for the entries of `raw` (scanned: its
/// counts are within the limits): grown by doubling, they left up to half of the
/// largest (the samples: 40 MB of a 52 MB profile) unused.
fn reserved(raw: &[u8]) -> Profile {
    let mut n = [0usize; 7];
    let mut pos = 0;
    while let Some((tag, wire, _, _)) = pprof_scan::field(raw, &mut pos) {
        match n.get_mut(tag as usize) {
            Some(c) if wire == 2 => *c += 1,
            _ => {}
        }
    }
    Profile {
        sample: Vec::with_capacity(n[2]),
        mapping: Vec::with_capacity(n[3]),
        location: Vec::with_capacity(n[4]),
        function: Vec::with_capacity(n[5]),
        string_table: Vec::with_capacity(n[6]),
        ..Profile::default()
    }
}
