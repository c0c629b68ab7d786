//! Combining profiles: pprof's `Merge`, and `diff` = pprof's `-diff_base`.

use super::{Builder, Label, Line, Profile, ProfileError, Sample};
use std::borrow::Cow;

/// The label pprof puts on the (negated) base samples of a diff; `go tool pprof` then
/// computes percentages against the base total.
pub const DIFF_BASE_LABEL: (&str, &str) = ("pprof::base", "true");

/// NEW − BASE per stack, exactly as `go tool pprof -diff_base BASE NEW` builds it: the
/// base's values are negated and labelled `pprof::base=true`, then merged with NEW.
/// `go tool pprof -top diff.pb.gz` prints what `-diff_base` would, and the viewer reads
/// it like any profile (positive = grew, negative = shrank). [`Merger`] builds the same
/// from profiles given up one at a time (what `heapsnap diff` does, to hold one input
/// at a time).
pub fn diff(base: &Profile, new: &Profile) -> Result<Profile, ProfileError> {
    let mut m = Merger::new();
    m.add_borrowed("new", new, false)?;
    m.add_borrowed("base", base, true)?;
    m.finish()
}

/// Merges profiles with the same sample types and period type into one (pprof's
/// `profile.Merge`): functions, mappings and locations are deduplicated, samples with
/// the same stack and labels are summed, all-zero samples are dropped; header fields
/// combine as pprof does (earliest time, summed duration, largest period, unique
/// comments in order, the first default sample type).
pub fn merge(srcs: &[&Profile]) -> Result<Profile, ProfileError> {
    let mut m = Merger::new();
    for (i, p) in srcs.iter().enumerate() {
        m.add_borrowed(&format!("profile {}", i + 1), p, false)?;
    }
    m.finish()
}

/// [`merge`] and [`diff`] one profile at a time: each profile given is folded into the
/// result and can be dropped before the next is read, and one given by value gives up
/// its samples' vectors to the result instead of having them copied. So a diff of two
/// profiles holds one decoded input and the result, not both inputs, a copy of the
/// base and the result (1.57 GB for two 52 MB profiles before).
#[derive(Default)]
pub struct Merger {
    b: Builder,
    /// The first profile's name, sample types and period type: every later one must
    /// have the same.
    first: Option<(String, Kinds)>,
    time: i64,
    duration: i64,
    period: i64,
    default_type_set: bool,
    doc_url_set: bool,
}

/// A profile's sample types and period type, `(type, unit)` each.
type Kinds = (Vec<(String, String)>, Option<(String, String)>);

fn kinds(p: &Profile) -> Kinds {
    let own = |(t, u): (&str, &str)| (t.to_owned(), u.to_owned());
    let period = p
        .period_type
        .as_ref()
        .map(|t| own((p.str(t.r#type), p.str(t.unit))));
    (p.sample_types().into_iter().map(own).collect(), period)
}

impl Merger {
    /// An empty merge: [`Merger::finish`] before any profile is an error.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `p` (`name` says which it is in an error: `"new"`, a file name).
    pub fn add(&mut self, name: &str, p: Profile) -> Result<(), ProfileError> {
        self.add_owned(name, p, false)
    }

    /// Adds `p` as the base of a diff: its values negated and its samples labelled
    /// [`DIFF_BASE_LABEL`] (pprof's `-diff_base`), after the new profile.
    pub fn add_base(&mut self, name: &str, p: Profile) -> Result<(), ProfileError> {
        self.add_owned(name, p, true)
    }

    /// The merged profile.
    pub fn finish(mut self) -> Result<Profile, ProfileError> {
        if self.first.is_none() {
            return Err(ProfileError::Incompatible("no profiles to merge".into()));
        }
        let h = self.b.header_mut();
        h.time_nanos = self.time;
        h.duration_nanos = self.duration;
        h.period = self.period;
        Ok(self.b.finish())
    }

    /// Adds a profile whose samples are copied (the viewer keeps its inputs). Apart
    /// from [`Merger::add_owned`], so a build that only borrows (the viewer's bundle)
    /// carries one instance of the merge loop, not two.
    fn add_borrowed(&mut self, name: &str, p: &Profile, base: bool) -> Result<(), ProfileError> {
        self.add_with(name, p, p.sample.iter().map(Cow::Borrowed), base)
    }

    /// Adds a profile whose samples are taken out of it, vectors and all.
    fn add_owned(&mut self, name: &str, mut p: Profile, base: bool) -> Result<(), ProfileError> {
        let samples = std::mem::take(&mut p.sample);
        self.add_with(name, &p, samples.into_iter().map(Cow::Owned), base)
    }

    /// Checks `p` against the first profile, combines its header, then adds its
    /// `samples` (its own, borrowed or taken out of it) with what they refer to.
    fn add_with<'s>(
        &mut self,
        name: &str,
        p: &Profile,
        samples: impl Iterator<Item = Cow<'s, Sample>>,
        base: bool,
    ) -> Result<(), ProfileError> {
        let b = &mut self.b;
        let is_first = self.first.is_none();
        match &self.first {
            Some((first, k)) => {
                // The base named first, as on the command line.
                let (mine, theirs) = ((name, &kinds(p)), (first.as_str(), k));
                let (x, y) = if base { (mine, theirs) } else { (theirs, mine) };
                compatible(x, y)?;
            }
            None => {
                for t in &p.sample_type {
                    b.sample_type(p.str(t.r#type), p.str(t.unit));
                }
                self.first = Some((name.to_owned(), kinds(p)));
            }
        }
        if self.time == 0 || p.time_nanos < self.time {
            self.time = p.time_nanos;
        }
        self.duration = self.duration.saturating_add(p.duration_nanos);
        self.period = self.period.max(p.period);
        for c in p.comments() {
            b.comment(c);
        }
        if !self.default_type_set && !p.str(p.default_sample_type).is_empty() {
            b.default_sample_type(p.str(p.default_sample_type));
            self.default_type_set = true;
        }
        if is_first {
            if let Some(pt) = &p.period_type {
                b.period(p.str(pt.r#type), p.str(pt.unit), 0);
            }
            let drop = b.string(p.str(p.drop_frames));
            let keep = b.string(p.str(p.keep_frames));
            let h = b.header_mut();
            h.drop_frames = drop;
            h.keep_frames = keep;
        }
        if !self.doc_url_set && !p.str(p.doc_url).is_empty() {
            let doc = b.string(p.str(p.doc_url));
            b.header_mut().doc_url = doc;
            self.doc_url_set = true;
        }
        add(b, name, p, samples, base)
    }
}

/// Adds every non-zero sample of `samples` (those of `p`), with what it refers to, to
/// the builder; negated and labelled [`DIFF_BASE_LABEL`] when `base`.
fn add<'s>(
    b: &mut Builder,
    name: &str,
    p: &Profile,
    samples: impl Iterator<Item = Cow<'s, Sample>>,
    base: bool,
) -> Result<(), ProfileError> {
    // New ids by position in `p`'s tables, looked up through the same id index the
    // validation and analysis use.
    let positions = |ids: Vec<u64>| super::IdIndex::lenient(&ids);
    let new_id =
        |index: &super::IdIndex, ids: &[u64], id: u64| index.get(id).map_or(0, |i| ids[i as usize]);
    let mapping_pos = positions(p.mapping.iter().map(|m| m.id).collect());
    let mut mappings = Vec::with_capacity(p.mapping.len());
    let mut offsets = Vec::with_capacity(p.mapping.len());
    for m in &p.mapping {
        let (id, start) = b.mapping(m, p.str(m.filename), p.str(m.build_id));
        mappings.push(id);
        offsets.push(start.wrapping_sub(m.memory_start));
    }
    let function_pos = positions(p.function.iter().map(|f| f.id).collect());
    let functions: Vec<u64> = p
        .function
        .iter()
        .map(|f| {
            b.function(
                p.str(f.name),
                p.str(f.system_name),
                p.str(f.filename),
                f.start_line,
            )
        })
        .collect();
    let location_pos = positions(p.location.iter().map(|l| l.id).collect());
    let mut locations = Vec::with_capacity(p.location.len());
    for l in &p.location {
        let lines = l
            .line
            .iter()
            .map(|ln| Line {
                function_id: new_id(&function_pos, &functions, ln.function_id),
                ..*ln
            })
            .collect();
        let offset = new_id(&mapping_pos, &offsets, l.mapping_id);
        let id = b.location(
            new_id(&mapping_pos, &mappings, l.mapping_id),
            l.address.wrapping_add(offset),
            lines,
            l.is_folded,
        );
        locations.push(id);
    }
    b.reserve_samples(samples.size_hint().0);
    // One sample's new location ids, reused.
    let mut ids = Vec::new();
    for (i, s) in samples.enumerate() {
        if base {
            // −i64::MIN does not exist: wrapping would keep the base's value as it is.
            if let Some(v) = s.value.iter().find(|v| v.checked_neg().is_none()) {
                return Err(ProfileError::Incompatible(format!(
                    "{name} sample {i} has the value {v}, whose negation does not fit in 64 bits"
                )));
            }
        }
        if s.value.iter().all(|&v| v == 0) {
            continue;
        }
        // Rewritten in place: a sample taken out of its profile keeps its vectors.
        let mut s = s.into_owned();
        ids.clear();
        for id in &s.location_id {
            ids.push(new_id(&location_pos, &locations, id));
        }
        s.location_id = ids.as_slice().into();
        let mut label = Vec::from(s.label);
        if base {
            label.retain(|l| p.str(l.key) != DIFF_BASE_LABEL.0);
        }
        for l in &mut label {
            *l = Label {
                key: b.string(p.str(l.key)),
                str: b.string(p.str(l.str)),
                num: l.num,
                num_unit: b.string(p.str(l.num_unit)),
            };
        }
        if base {
            for v in &mut s.value {
                *v = -*v;
            }
            let (key, str) = (b.string(DIFF_BASE_LABEL.0), b.string(DIFF_BASE_LABEL.1));
            // Room for one more, not the doubling of a push (35 MB of a 52 MB base).
            label.reserve_exact(1);
            label.push(Label {
                key,
                str,
                num: 0,
                num_unit: 0,
            });
        }
        b.sample(s.location_id, s.value, label);
    }
    Ok(())
}

/// Same period type and sample types; the message names both sides (`"base"`/`"new"`).
fn compatible((na, a): (&str, &Kinds), (nb, b): (&str, &Kinds)) -> Result<(), ProfileError> {
    // Spelled out rather than `{:?}`: the viewer's release build compiles `Debug` out.
    let types = |t: &[(String, String)]| -> String {
        let list: Vec<String> = t.iter().map(|(ty, unit)| format!("{ty}/{unit}")).collect();
        format!("[{}]", list.join(", "))
    };
    if a.1 != b.1 {
        let show = |t: &Option<(String, String)>| {
            t.as_ref()
                .map_or("none".to_owned(), |t| types(std::slice::from_ref(t)))
        };
        return Err(ProfileError::Incompatible(format!(
            "period types differ: {na} has {}, {nb} has {}",
            show(&a.1),
            show(&b.1)
        )));
    }
    if a.0 != b.0 {
        return Err(ProfileError::Incompatible(format!(
            "sample types differ: {na} has {}, {nb} has {}",
            types(&a.0),
            types(&b.0)
        )));
    }
    Ok(())
}
