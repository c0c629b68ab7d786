//! Building a profile with interned strings and deduplicated functions, mappings,
//! locations and samples. One builder serves snapshot conversion and profile merging
//! (diff), so both produce the same, deterministic id assignment.

use super::{Function, Label, Line, Location, Mapping, Profile, Sample, Stack, ValueType, Values};
use rustc_hash::FxHashMap as HashMap;

/// Incrementally builds a valid [`Profile`]. Ids are assigned 1, 2, … in insertion
/// order, so the same inputs in the same order give the same bytes.
#[derive(Debug)]
pub struct Builder {
    p: Profile,
    strings: HashMap<String, u64>,
    /// Functions, mappings and locations by their dedup key, spelled as words behind a
    /// [`Kind`] tag: one map type instead of three (size: see the crate docs). Value:
    /// the id.
    keys: HashMap<Vec<u64>, u64>,
    /// Samples by the hash of their key (stack and labels): the index of the first
    /// sample with that hash, the others chained through `next_sample`. The key itself
    /// is not stored (it is the sample's own stack and labels, compared on a hit):
    /// a copy of every stack took as much memory as the samples (227 MB of a 1.5 GB
    /// diff of two 52 MB profiles). u64 values, as a `u32` pads to the same 16 bytes
    /// an entry: the map type of `mapping_start`, one copy of its code in the wasm.
    samples: HashMap<u64, u64>,
    /// For each sample, the next sample of the same key hash (`NO_SAMPLE`: none).
    next_sample: Vec<u32>,
    /// The key being built (reused: a repeated key costs no allocation).
    key: Vec<u64>,
    /// A stored sample's key, rebuilt to compare on a hash hit.
    other: Vec<u64>,
    mapping_start: HashMap<u64, u64>,
}

/// What symbolization provided for a mapping: pprof's `has_*` flags, which tell
/// pprof whether to try symbolizing it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MappingFlags {
    /// Some location has a function name.
    pub functions: bool,
    /// Some location has a file name.
    pub filenames: bool,
    /// Some location has a line number.
    pub line_numbers: bool,
    /// Inline frames are known (DWARF, not a symbol table).
    pub inline_frames: bool,
}

/// The end of a [`Builder::next_sample`] chain.
const NO_SAMPLE: u32 = u32::MAX;

/// The first word of a [`Builder`] key.
#[derive(Clone, Copy)]
enum Kind {
    Function,
    Mapping,
    Location,
    Sample,
}

/// A sample's dedup key into `out`: the stack length first (so stack and labels cannot
/// run into each other), the stack, then the labels sorted (compared as a set).
fn sample_key(out: &mut Vec<u64>, location_id: &Stack, label: &[Label]) {
    // Unstable: the key is the whole label, so equal keys are equal labels. (Through
    // the analysis' one shared sort: less code in the wasm viewer.)
    let key = |l: &Label| (l.key, l.str, l.num, l.num_unit);
    let order =
        crate::order::sorted_order(label.len(), &|a, b| key(&label[a]).cmp(&key(&label[b])));
    out.clear();
    out.push(Kind::Sample as u64);
    let at = out.len();
    out.push(0);
    location_id.append_to(out);
    out[at] = (out.len() - at - 1) as u64;
    for &i in &order {
        let l = &label[i as usize];
        out.extend([l.key, l.str, l.num, l.num_unit].map(|w| w as u64));
    }
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// An empty profile whose string table starts with "".
    pub fn new() -> Self {
        let mut b = Builder {
            p: Profile::default(),
            strings: HashMap::default(),
            keys: HashMap::default(),
            samples: HashMap::default(),
            next_sample: Vec::new(),
            key: Vec::new(),
            other: Vec::new(),
            mapping_start: HashMap::default(),
        };
        b.string("");
        b
    }

    /// Interns a string; returns its string-table index.
    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i as i64;
        }
        let i = self.p.string_table.len() as u64;
        self.p.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i as i64
    }

    /// Starts a key of `kind` in `self.key`.
    fn key(&mut self, kind: Kind, words: &[u64]) {
        self.key.clear();
        self.key.push(kind as u64);
        self.key.extend_from_slice(words);
    }

    /// The value stored for `self.key`, or `new` stored for it.
    fn find_or_insert(&mut self, new: u64) -> Result<u64, u64> {
        match self.keys.get(self.key.as_slice()) {
            Some(&v) => Ok(v),
            None => {
                self.keys.insert(self.key.clone(), new);
                Err(new)
            }
        }
    }

    /// A `(type, unit)` pair.
    pub fn value_type(&mut self, ty: &str, unit: &str) -> ValueType {
        ValueType {
            r#type: self.string(ty),
            unit: self.string(unit),
        }
    }

    /// Appends a sample type (order = value order of every sample).
    pub fn sample_type(&mut self, ty: &str, unit: &str) {
        let vt = self.value_type(ty, unit);
        self.p.sample_type.push(vt);
    }

    /// Sets the period type and period.
    pub fn period(&mut self, ty: &str, unit: &str, period: i64) {
        self.p.period_type = Some(self.value_type(ty, unit));
        self.p.period = period;
    }

    /// Sets the default sample type by name.
    pub fn default_sample_type(&mut self, ty: &str) {
        self.p.default_sample_type = self.string(ty);
    }

    /// Appends a comment (once: repeated comments are dropped, as pprof's merge does).
    pub fn comment(&mut self, c: &str) {
        let i = self.string(c);
        if !self.p.comment.contains(&i) {
            self.p.comment.push(i);
        }
    }

    /// Access to the header fields the builder has no helper for (time, duration,
    /// drop/keep frames).
    pub fn header_mut(&mut self) -> &mut Profile {
        &mut self.p
    }

    /// A function, deduplicated by (name, system name, file, start line).
    pub fn function(
        &mut self,
        name: &str,
        system_name: &str,
        filename: &str,
        start_line: i64,
    ) -> u64 {
        let (name, system_name, filename) = (
            self.string(name),
            self.string(system_name),
            self.string(filename),
        );
        let words = [name, system_name, filename, start_line].map(|w| w as u64);
        self.key(Kind::Function, &words);
        let id = self.p.function.len() as u64 + 1;
        if let Ok(id) = self.find_or_insert(id) {
            return id;
        }
        self.p.function.push(Function {
            id,
            name,
            system_name,
            filename,
            start_line,
        });
        id
    }

    /// A mapping, deduplicated as pprof's merge does (size rounded up to 4 KiB, file
    /// offset, and build id or else file name). `m.filename`/`m.build_id` are ignored:
    /// the strings are passed instead. Returns the id and the start address of the
    /// mapping that was kept (to relocate addresses into it).
    pub fn mapping(&mut self, m: &Mapping, filename: &str, build_id: &str) -> (u64, u64) {
        let size = m
            .memory_limit
            .wrapping_sub(m.memory_start)
            .wrapping_add(0xfff)
            & !0xfff;
        let key_str = if !build_id.is_empty() {
            build_id
        } else {
            filename
        };
        let key_str = self.string(key_str) as u64;
        self.key(Kind::Mapping, &[size, m.file_offset, key_str]);
        let id = self.p.mapping.len() as u64 + 1;
        if let Ok(id) = self.find_or_insert(id) {
            return (id, self.mapping_start[&id]);
        }
        let filename = self.string(filename);
        let build_id = self.string(build_id);
        self.p.mapping.push(Mapping {
            id,
            filename,
            build_id,
            ..*m
        });
        self.mapping_start.insert(id, m.memory_start);
        (id, m.memory_start)
    }

    /// Replaces the symbolization flags of a mapping (set once everything about it is
    /// known).
    pub fn mapping_flags(&mut self, id: u64, f: MappingFlags) {
        if let Some(m) = self.p.mapping.iter_mut().find(|m| m.id == id) {
            m.has_functions = f.functions;
            m.has_filenames = f.filenames;
            m.has_line_numbers = f.line_numbers;
            m.has_inline_frames = f.inline_frames;
        }
    }

    /// A location, deduplicated by (mapping, address relative to the mapping, lines,
    /// folded). `lines` are innermost first; `function_id`s must come from
    /// [`Builder::function`]; `mapping_id` 0 = no mapping.
    pub fn location(
        &mut self,
        mapping_id: u64,
        address: u64,
        line: Vec<Line>,
        is_folded: bool,
    ) -> u64 {
        let start = self.mapping_start.get(&mapping_id).copied().unwrap_or(0);
        self.key(
            Kind::Location,
            &[
                mapping_id,
                address.wrapping_sub(start),
                u64::from(is_folded),
            ],
        );
        for l in &line {
            self.key
                .extend([l.function_id, l.line as u64, l.column as u64]);
        }
        let id = self.p.location.len() as u64 + 1;
        if let Ok(id) = self.find_or_insert(id) {
            return id;
        }
        self.p.location.push(Location {
            id,
            mapping_id,
            address,
            line,
            is_folded,
        });
        id
    }

    /// Adds a sample; samples with the same stack and labels are merged by summing
    /// their values. Labels are kept in the order given but compared as a set.
    pub fn sample(
        &mut self,
        location_id: impl Into<Stack>,
        value: impl Into<Values>,
        label: Vec<Label>,
    ) {
        self.add_sample(location_id.into(), value.into(), label);
    }

    /// [`Builder::sample`], not generic (one copy in the wasm).
    fn add_sample(&mut self, location_id: Stack, value: Values, label: Vec<Label>) {
        sample_key(&mut self.key, &location_id, &label);
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut h = rustc_hash::FxHasher::default();
            self.key.hash(&mut h);
            h.finish()
        };
        let mut at = self.samples.get(&hash).map_or(NO_SAMPLE, |&i| i as u32);
        while at != NO_SAMPLE {
            let s = &self.p.sample[at as usize];
            // The same key: the same stack, and the same labels as a set (the keys
            // compared only when there are two labels or more to order).
            let same = s.location_id == location_id
                && s.label.len() == label.len()
                && (*s.label == *label
                    || label.len() > 1 && {
                        sample_key(&mut self.other, &s.location_id, &s.label);
                        self.other == self.key
                    });
            if same {
                break;
            }
            at = self.next_sample[at as usize];
        }
        let index = self.p.sample.len() as u32;
        if at != NO_SAMPLE {
            let s = &mut self.p.sample[at as usize];
            let fits = (s.value.iter().zip(&value)).all(|(a, b)| a.checked_add(*b).is_some());
            if fits {
                for (a, b) in s.value.iter_mut().zip(&value) {
                    *a += *b;
                }
                return;
            }
            // A sum past 64 bits: kept as a sample of its own (same stack and labels,
            // not in the chain, so later ones still add to the first), so no figure
            // wraps; the analysis reports the total.
            self.next_sample.push(NO_SAMPLE);
        } else {
            // First of its key: at the head of its hash's chain.
            let head = self
                .samples
                .insert(hash, u64::from(index))
                .map_or(NO_SAMPLE, |h| h as u32);
            self.next_sample.push(head);
        }
        self.p.sample.push(Sample {
            location_id,
            value,
            label: label.into(),
        });
    }

    /// Room for `n` more samples (a merge knows how many may come): exactly, not the
    /// doubling of pushes, whose unused half was the largest block of a big diff.
    pub fn reserve_samples(&mut self, n: usize) {
        self.p.sample.reserve_exact(n);
        self.next_sample.reserve_exact(n);
    }

    /// A numeric label (e.g. `bytes` = object size).
    pub fn num_label(&mut self, key: &str, num: i64, unit: &str) -> Label {
        Label {
            key: self.string(key),
            str: 0,
            num,
            num_unit: if unit.is_empty() {
                0
            } else {
                self.string(unit)
            },
        }
    }

    /// The finished profile (valid by construction).
    pub fn finish(self) -> Profile {
        self.p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(b: &mut Builder, k: &str, v: &str) -> Label {
        Label {
            key: b.string(k),
            str: b.string(v),
            num: 0,
            num_unit: 0,
        }
    }

    /// Samples merge by stack and label set, found through the hash chain without a
    /// stored key: labels in another order merge; another label, a longer stack or a
    /// stack that is a prefix do not; a sum past 64 bits stays a sample of its own and
    /// the next one adds to the first.
    #[test]
    fn samples_merge_by_stack_and_label_set() {
        let mut b = Builder::new();
        let (x, y, z) = (
            label(&mut b, "a", "1"),
            label(&mut b, "b", "2"),
            label(&mut b, "a", "3"),
        );
        b.sample(vec![1, 2], vec![1], vec![x, y]);
        b.sample(vec![1, 2], vec![2], vec![y, x]);
        b.sample(vec![1, 2], vec![4], vec![x, z]);
        b.sample(vec![1, 2, 3], vec![8], vec![x, y]);
        b.sample(vec![1], vec![16], vec![x, y]);
        b.sample(vec![1], vec![32], vec![x, y]);
        b.sample(vec![1, 2], vec![i64::MAX], vec![x, y]);
        b.sample(vec![1, 2], vec![64], vec![y, x]);
        let values: Vec<i64> = b.finish().sample.iter().map(|s| s.value[0]).collect();
        assert_eq!(values, [67, 4, 8, 48, i64::MAX]);
    }
}
