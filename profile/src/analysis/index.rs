//! The index every analysis runs over: locations expanded once into frames with
//! function-level node ids, so top, flame and source are single passes over samples.

use crate::profile::{push_varint, IdIndex, Profile, StackIds, DIFF_BASE_LABEL};
use std::rc::Rc;

/// A hash map with FxHash: keys here are ids and packed ids, SipHash would dominate.
/// The same hasher type as the profile builder's and merge's maps, so that maps of the
/// same key and value share their code in the wasm.
pub(crate) type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// One frame of a location: a function-level node, its source line, and whether it is
/// inlined into the next (outer) frame of the same location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Function-level node id (index into [`Index::names`]).
    pub node: u32,
    /// Index into `profile.function`, or `u32::MAX` for a location without lines.
    pub func: u32,
    /// Source line (0 when unknown).
    pub line: i64,
    /// Inlined into its caller: not the outermost line of its location.
    pub inlined: bool,
}

/// A profile prepared for analysis. Build once per profile; every view (any sample
/// index, any filter) reuses it. [`Index::new`] borrows the profile (one view, as the
/// CLI prints); [`Index::shared`] holds it, so the index can be kept as long as the
/// profile is shown (the viewer, across sample types, filters and views).
#[derive(Debug)]
pub struct Index<'p> {
    /// The profile analysed.
    pub profile: Analysed<'p>,
    /// Printable name of each function-level node (pprof's `PrintableName`).
    pub names: Vec<String>,
    /// Per location (in `profile.location` order): its frames, innermost first.
    loc_frames: Vec<(u32, u32)>,
    frames: Vec<Frame>,
    /// Per sample: its frames root first (indices into `frames`), flattened; the
    /// order every analysis walks, computed once. The only per-sample copy of the
    /// stacks: a location's frames are contiguous in `frames`, so the filters that ask
    /// about locations read them from here too (on a profile of 3 million distinct
    /// stacks, a location copy was 0.3 GB more). Held as varints, 1–2 bytes a frame
    /// where a `u32` took 4 (that profile's 79 million frames: 315 MB as `u32`s).
    stack_frames: Vec<u8>,
    /// Per sample: where its frames end in `stack_frames` (a byte offset; they start
    /// where the sample before's end). An end alone, not an offset and a length: 4 bytes
    /// a sample less (10 MB of a profile of 2.5 million samples).
    frame_ends: Vec<u32>,
    /// Per sample: labelled as a diff base (`pprof::base=true`); empty for a profile
    /// without that label (every profile but a diff), whose samples are all not.
    base: Vec<bool>,
    /// The last filter [`Index::kept`] answered and its answer: one filter change asks
    /// for the same samples from the top table, the flame graph, the source view and
    /// the shown total, and the regexes run once, not four times.
    last_kept: std::cell::RefCell<Option<(Filter, Rc<[bool]>)>>,
    /// Every sample by stack, once sorted ([`Index::sort_stacks`]).
    pub(crate) order: std::cell::RefCell<Option<Rc<super::flame::StackOrder>>>,
}

/// The profile an [`Index`] reads: borrowed from the caller, or shared with it.
#[derive(Clone, Debug)]
pub enum Analysed<'p> {
    /// The caller's profile ([`Index::new`]).
    Borrowed(&'p Profile),
    /// A profile the index keeps alive ([`Index::shared`]).
    Shared(Rc<Profile>),
}

impl std::ops::Deref for Analysed<'_> {
    type Target = Profile;
    fn deref(&self) -> &Profile {
        match self {
            Analysed::Borrowed(p) => p,
            Analysed::Shared(p) => p,
        }
    }
}

impl Index<'static> {
    /// Indexes a profile and keeps it (see [`Index::new`]).
    pub fn shared(profile: Rc<Profile>) -> Self {
        Index::build_shared(profile).finish()
    }

    /// [`Index::shared`] built a slice at a time ([`IndexBuild::step`]).
    pub fn build_shared(profile: Rc<Profile>) -> IndexBuild<'static> {
        IndexBuild::over(Analysed::Shared(profile))
    }
}

impl<'p> Index<'p> {
    /// Indexes a profile. Unknown location ids (only in unvalidated profiles) are
    /// skipped rather than trusted.
    pub fn new(profile: &'p Profile) -> Self {
        IndexBuild::new(profile).finish()
    }
}

/// An [`Index`] being built, a slice of samples at a time, so that a caller with an
/// event loop to serve (the viewer, loading a large profile) can let it run between
/// slices: [`Index::new`] and [`Index::shared`] are this builder run to its end.
pub struct IndexBuild<'p> {
    /// The index so far: every location's frames, the samples before `next`.
    ix: Index<'p>,
    loc_pos: IdIndex,
    /// One sample's location indices (leaf first), reused from sample to sample.
    locs: Vec<u32>,
    /// Per location (by index): its frames outermost first as `stack_frames` holds
    /// them, varints, so a sample's are its locations' copied; and where each is.
    loc_bytes: Vec<u8>,
    loc_bytes_at: Vec<(u32, u32)>,
    /// The diff-base label's key and value strings, if the profile has them.
    base_label: Option<(i64, i64)>,
    next: usize,
}

/// A sample's locations expanded into frames, as the index expands them
/// ([`IndexBuild::expander`]; native only, as its one user).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) struct Expander<'a> {
    loc_pos: &'a IdIndex,
    loc_bytes: &'a [u8],
    loc_bytes_at: &'a [(u32, u32)],
    frames: &'a [Frame],
}

#[cfg(not(target_arch = "wasm32"))]
impl<'a> Expander<'a> {
    /// Sample `s`'s frames root first, as [`Index::root_first`] gives an indexed
    /// sample's: its locations from the root, each one's frames as the index writes
    /// them (`loc_bytes`), expanded through `locs` (reused).
    pub(crate) fn root_first<'b>(
        &'b self,
        s: &crate::profile::Sample,
        locs: &'b mut Vec<u32>,
    ) -> impl Iterator<Item = &'a Frame> + 'b {
        locs.clear();
        self.loc_pos.extend(locs, &s.location_id);
        locs.iter().rev().flat_map(|&l| {
            let (at, n) = self.loc_bytes_at[l as usize];
            let bytes = &self.loc_bytes[at as usize..(at + n) as usize];
            StackIds::over(bytes).map(|f| &self.frames[f as usize])
        })
    }
}

impl<'p> IndexBuild<'p> {
    /// Expands every location into frames; no sample is indexed yet.
    fn over(analysed: Analysed<'p>) -> Self {
        let profile = &*analysed;
        let mut names = Vec::new();
        // u64 values: the same map type as the profile builder's strings (one copy of
        // the map code in the wasm).
        let mut name_ids: FxMap<String, u64> = FxMap::default();
        // Allocates only for a name not seen before.
        let mut intern = |s: &str| -> u32 {
            if let Some(&i) = name_ids.get(s) {
                return i as u32;
            }
            let i = names.len() as u32;
            names.push(s.to_owned());
            name_ids.insert(s.to_owned(), u64::from(i));
            i
        };
        let func_pos = positions(profile.function.iter().map(|f| f.id).collect());
        let map_pos = mapping_positions(profile);
        let map_file = |id: u64| {
            map_pos
                .get(id)
                .map_or("", |i| profile.str(profile.mapping[i as usize].filename))
        };
        let mut frames = Vec::new();
        let mut loc_frames = Vec::with_capacity(profile.location.len());
        for loc in &profile.location {
            let objfile = map_file(loc.mapping_id);
            let start = frames.len() as u32;
            if loc.line.is_empty() {
                frames.push(Frame {
                    node: intern(&unnamed(objfile)),
                    func: u32::MAX,
                    line: 0,
                    inlined: false,
                });
            }
            let n = loc.line.len();
            for (i, line) in loc.line.iter().enumerate() {
                let func = func_pos.get(line.function_id);
                let name = func
                    .map(|f| profile.str(profile.function[f as usize].name))
                    .filter(|s| !s.is_empty());
                frames.push(Frame {
                    node: match name {
                        Some(n) => intern(n),
                        None => intern(&unnamed(objfile)),
                    },
                    func: func.unwrap_or(u32::MAX),
                    line: line.line,
                    inlined: i + 1 < n,
                });
            }
            loc_frames.push((start, frames.len() as u32 - start));
        }
        let loc_pos = positions(profile.location.iter().map(|l| l.id).collect());
        let mut loc_bytes = Vec::new();
        let mut loc_bytes_at = Vec::with_capacity(loc_frames.len());
        for &(fs, n) in &loc_frames {
            let start = loc_bytes.len() as u32;
            for f in (fs..fs + n).rev() {
                push_varint(&mut loc_bytes, u64::from(f));
            }
            loc_bytes_at.push((start, loc_bytes.len() as u32 - start));
        }
        let base_label =
            find_str(profile, DIFF_BASE_LABEL.0).zip(find_str(profile, DIFF_BASE_LABEL.1));
        let n = profile.sample.len();
        IndexBuild {
            ix: Index {
                stack_frames: Vec::new(),
                frame_ends: Vec::with_capacity(n),
                names,
                loc_frames,
                frames,
                base: Vec::new(),
                last_kept: Default::default(),
                order: Default::default(),
                profile: analysed,
            },
            loc_pos,
            locs: Vec::new(),
            loc_bytes,
            loc_bytes_at,
            base_label,
            next: 0,
        }
    }

    /// Indexes the next `n` samples (at most): true when every sample is indexed.
    pub fn step(&mut self, n: usize) -> bool {
        let ix = &mut self.ix;
        let samples = &ix.profile.sample;
        let end = samples.len().min(self.next.saturating_add(n));
        // (Not in the browser viewer, which builds in slices and has one thread.)
        #[cfg(not(target_arch = "wasm32"))]
        if self.next == 0 && end == samples.len() {
            self.all_at_once();
            return true;
        }
        // An index loop: the iterator chain clippy prefers costs 0.2 KiB of bundle.
        #[allow(clippy::needless_range_loop)]
        for i in self.next..end {
            let s = &samples[i];
            self.locs.clear();
            self.loc_pos.extend(&mut self.locs, &s.location_id);
            if let Some((k, v)) = self.base_label {
                ix.base
                    .push(s.label.iter().any(|l| l.key == k && l.str == v));
            }
            push_frames(
                &mut ix.stack_frames,
                &self.locs,
                &self.loc_bytes,
                &self.loc_bytes_at,
            );
            ix.frame_ends.push(ix.stack_frames.len() as u32);
        }
        self.next = end;
        if end < samples.len() {
            return false;
        }
        // The room doubling left (up to half), given back: the flame graph's build
        // after this takes it (14 MB of the 5 MB Go heap profile's 32 MB array).
        ix.stack_frames.shrink_to_fit();
        true
    }

    /// Every sample indexed in one go (`Index::new`, the CLI), on two threads, each
    /// half of the samples: its frames counted first, so the flattened array is sized
    /// exactly (doubling left up to half of it unused: on a profile of 3 million
    /// distinct stacks, 512 MiB), then written in place. Half the time of one thread
    /// (`heapsnap top` on a 30 MB Go heap profile: the index 0.62 → 0.31 s); where no
    /// thread can start, both halves run here.
    #[cfg(not(target_arch = "wasm32"))]
    fn all_at_once(&mut self) {
        use crate::profile::Sample;
        let (loc_pos, bytes, at) = (&self.loc_pos, &self.loc_bytes, &self.loc_bytes_at);
        let samples = &self.ix.profile.sample;
        let (a, b) = samples.split_at(samples.len() / 2);
        let count = |half: &[Sample]| -> usize {
            let ids = half.iter().flat_map(|s| s.location_id.iter());
            ids.filter_map(|id| loc_pos.get(id))
                .map(|l| at[l as usize].1 as usize)
                .sum()
        };
        let (na, nb) = crate::beside::beside(samples.len(), || count(a), || count(b));
        let mut frames = vec![0u8; na + nb];
        let mut ends = vec![0u32; samples.len()];
        let (fa, fb) = frames.split_at_mut(na);
        let (ea, eb) = ends.split_at_mut(a.len());
        // Each half's samples: their frames written from `base` (the half's start in
        // `frames`), and where each sample's end.
        let fill = |half: &[Sample], out: &mut [u8], ends: &mut [u32], base: usize| {
            let mut locs = Vec::new();
            let mut pos = 0;
            for (s, end) in half.iter().zip(ends) {
                locs.clear();
                loc_pos.extend(&mut locs, &s.location_id);
                pos = write_frames(out, pos, &locs, bytes, at);
                *end = (base + pos) as u32;
            }
        };
        crate::beside::beside(samples.len(), || fill(a, fa, ea, 0), || fill(b, fb, eb, na));
        self.ix.stack_frames = frames;
        self.ix.frame_ends = ends;
        self.next = self.ix.profile.sample.len();
        self.base_flags();
    }

    /// An index of `profile` to be built ([`IndexBuild::finish`]) or, natively, read
    /// without its per-sample stacks ([`IndexBuild::top_unstacked`]).
    pub fn new(profile: &'p Profile) -> Self {
        IndexBuild::over(Analysed::Borrowed(profile))
    }

    /// The index so far: every location's frames, no sample's yet (before any
    /// [`IndexBuild::step`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn index(&self) -> &Index<'p> {
        &self.ix
    }

    /// Every sample's diff-base flag (none for a profile without the label), all at
    /// once.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn base_flags(&mut self) {
        if let Some((k, v)) = self.base_label {
            let labelled =
                |s: &crate::profile::Sample| s.label.iter().any(|l| l.key == k && l.str == v);
            self.ix.base = self.ix.profile.sample.iter().map(labelled).collect();
        }
    }

    /// What expands a sample's locations into frames, without the index: shareable
    /// between threads (the index is not: its caches are `RefCell`s).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn expander(&self) -> Expander<'_> {
        Expander {
            loc_pos: &self.loc_pos,
            loc_bytes: &self.loc_bytes,
            loc_bytes_at: &self.loc_bytes_at,
            frames: &self.ix.frames,
        }
    }

    /// The index, with the samples not yet indexed done in one go.
    pub fn finish(mut self) -> Index<'p> {
        self.step(usize::MAX);
        self.ix
    }
}

impl<'p> Index<'p> {
    /// Per node: does it appear as an inlined frame in any location?
    pub fn inlinable(&self) -> Vec<bool> {
        let mut v = vec![false; self.names.len()];
        for f in self.frames.iter().filter(|f| f.inlined) {
            v[f.node as usize] = true;
        }
        v
    }

    /// Number of function-level nodes.
    pub fn node_count(&self) -> usize {
        self.names.len()
    }

    /// The frames of location index `loc`, innermost first.
    pub fn location_frames(&self, loc: u32) -> &[Frame] {
        let (s, n) = self.loc_frames[loc as usize];
        &self.frames[s as usize..(s + n) as usize]
    }

    /// Frames of sample `i` from the root down to the leaf (the order a call tree
    /// reads), each location's outermost line first.
    pub fn root_first(&self, i: usize) -> impl Iterator<Item = &Frame> + '_ {
        self.frame_indices(i).map(move |f| &self.frames[f as usize])
    }

    /// [`Index::root_first`] as indices into the index's frames.
    fn frame_indices(&self, i: usize) -> StackIds<'_> {
        let start = i.checked_sub(1).map_or(0, |j| self.frame_ends[j]);
        StackIds::over(&self.stack_frames[start as usize..self.frame_ends[i] as usize])
    }

    /// Value of sample `i` at `sample_index` (0 when the sample lacks it).
    pub fn value(&self, i: usize, sample_index: usize) -> i64 {
        self.profile.sample[i]
            .value
            .get(sample_index)
            .copied()
            .unwrap_or(0)
    }

    /// Is sample `i` a negated base sample of a diff?
    pub fn is_base(&self, i: usize) -> bool {
        self.base.get(i).copied().unwrap_or(false)
    }

    /// Number of samples indexed (every sample of the profile once the index is built).
    pub fn sample_count(&self) -> usize {
        self.frame_ends.len()
    }

    /// The number of frames of all samples (each a varint): room for every stack sized
    /// once, where a `Vec` grown by doubling held up to twice its size (wasm memory
    /// never shrinks back).
    pub(crate) fn frame_count(&self) -> usize {
        crate::profile::varints_in(&self.stack_frames)
    }

    /// The total percentages are relative to, as pprof's `computeTotal`: the sum of
    /// absolute values over all samples (before any filter), or of the base samples
    /// alone in a diff profile.
    ///
    /// The one overflow check of the analysis: an error when the absolute values of
    /// all samples add up past `i64::MAX`. Every figure a view sums (flat, cum, a flame
    /// node, a source line, what a filter shows) is a sum over a subset of the samples,
    /// so below that bound none of them can overflow; above it no total would be right.
    pub fn total(&self, sample_index: usize) -> Result<i64, ValueOverflow> {
        let (mut total, mut base) = (0u128, 0u128);
        // (The profile's samples, not `sample_count`: an index read without its stacks
        // (`IndexBuild::top_unstacked`) has their values and base flags, no frames.)
        for i in 0..self.profile.sample.len() {
            let v = u128::from(self.value(i, sample_index).unsigned_abs());
            total += v;
            if self.is_base(i) {
                base += v;
            }
        }
        if total > i64::MAX as u128 {
            let p = &self.profile;
            let t = p.sample_type.get(sample_index);
            return Err(ValueOverflow {
                sample_type: t.map_or(String::new(), |t| p.str(t.r#type).to_owned()),
                unit: t.map_or(String::new(), |t| p.str(t.unit).to_owned()),
                sum: total,
            });
        }
        // Both fit: base <= total <= i64::MAX.
        Ok(if base > 0 { base } else { total } as i64)
    }

    /// Which samples a filter keeps (pprof's `FilterSamplesByName`): with a focus, a
    /// sample needs a location matching it; a sample with any location matching ignore
    /// is dropped.
    /// Answered from a one-entry cache when `filter` holds the same patterns (the same
    /// `Pattern`s, by identity) as the last call.
    pub fn kept(&self, filter: &Filter) -> Rc<[bool]> {
        if let Some((f, kept)) = &*self.last_kept.borrow() {
            if f.same(filter) {
                return kept.clone();
            }
        }
        let kept: Rc<[bool]> = self.kept_now(filter).into();
        *self.last_kept.borrow_mut() = Some((filter.clone(), kept.clone()));
        kept
    }

    fn kept_now(&self, filter: &Filter) -> Vec<bool> {
        let n = self.sample_count();
        if filter.focus.is_none() && filter.ignore.is_none() {
            return vec![true; n];
        }
        let locs = &self.profile.location;
        let map_pos = mapping_positions(&self.profile);
        let map_file = |id: u64| {
            map_pos
                .get(id)
                .map(|i| self.profile.mapping[i as usize].filename)
        };
        // A pattern with its answer per string-table index (0 not asked, 1 no, 2 yes):
        // names and files repeat across locations, and asking can be a call into the
        // browser's RegExp.
        let strings = self.profile.string_table.len();
        let memo = |re: &Pattern| {
            let re = re.clone();
            let mut cache = vec![0u8; strings];
            move |s: i64| -> bool {
                let Some(c) = usize::try_from(s).ok().and_then(|i| cache.get_mut(i)) else {
                    return re.is_match(self.profile.str(s));
                };
                if *c == 0 {
                    *c = 1 + u8::from(re.is_match(self.profile.str(s)));
                }
                *c == 2
            }
        };
        let matches = |m: &mut dyn FnMut(i64) -> bool, li: usize| -> bool {
            let loc = &locs[li];
            self.location_frames(li as u32).iter().any(|f| {
                f.func != u32::MAX && {
                    let func = &self.profile.function[f.func as usize];
                    m(func.name) || m(func.filename)
                }
            }) || map_file(loc.mapping_id).is_some_and(&mut *m)
        };
        let mut ignore = filter.ignore.as_ref().map(memo);
        let mut focus = filter.focus.as_ref().map(memo);
        // Per frame, its location's class: Some(true) focused, Some(false) ignored,
        // None neither. Every location has at least one frame, and its frames are
        // contiguous, so a sample's frames meet exactly its locations.
        let mut class: Vec<Option<bool>> = Vec::with_capacity(self.frames.len());
        for li in 0..locs.len() {
            let c = if ignore.as_mut().is_some_and(|m| matches(m, li)) {
                Some(false)
            } else if focus.as_mut().is_none_or(|m| matches(m, li)) {
                Some(true)
            } else {
                None
            };
            let n = self.loc_frames[li].1 as usize;
            class.extend(std::iter::repeat_n(c, n));
        }
        (0..n)
            .map(|i| {
                let mut f = false;
                for l in self.frame_indices(i) {
                    match class[l as usize] {
                        Some(false) => return false,
                        Some(true) => f = true,
                        None => {}
                    }
                }
                f
            })
            .collect()
    }
}

/// Sample values that add up past what 64-bit figures hold: the profile is refused
/// for that sample type rather than shown with wrapped totals and percentages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueOverflow {
    /// The sample type's name (from the profile).
    pub sample_type: String,
    /// Its unit (from the profile).
    pub unit: String,
    /// The sum of the absolute values of all samples.
    pub sum: u128,
}

impl std::fmt::Display for ValueOverflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the samples' {} values ({}) add up to {}, past the largest 64-bit total ({}): no total or percentage would be right",
            self.sample_type,
            self.unit,
            decimal(self.sum),
            i64::MAX
        )
    }
}

/// `n` in decimal, without `<u128 as Display>` (1.2 KiB of the viewer's wasm for this
/// one message): long division by 10 over 32-bit limbs.
fn decimal(n: u128) -> String {
    let mut limbs = [
        (n >> 96) as u32,
        (n >> 64) as u32,
        (n >> 32) as u32,
        n as u32,
    ];
    let mut digits = Vec::new();
    loop {
        let mut rem = 0u64;
        for l in limbs.iter_mut() {
            let cur = rem << 32 | u64::from(*l);
            *l = (cur / 10) as u32;
            rem = cur % 10;
        }
        digits.push(char::from(b'0' + rem as u8));
        if limbs == [0; 4] {
            break;
        }
    }
    digits.iter().rev().collect()
}

impl std::error::Error for ValueOverflow {}

/// pprof's name for a frame without a function name: the mapping's base name in
/// brackets, or `<unknown>`.
fn unnamed(objfile: &str) -> String {
    if objfile.is_empty() {
        "<unknown>".into()
    } else {
        format!("[{}]", objfile.rsplit('/').next().unwrap_or(objfile))
    }
}

fn find_str(p: &Profile, s: &str) -> Option<i64> {
    p.string_table.iter().position(|x| x == s).map(|i| i as i64)
}

/// A compiled focus or ignore expression: any `&str` predicate. The CLI compiles with
/// regex-lite ([`Filter::new`], feature `regex`); the browser viewer plugs in the
/// browser's own `RegExp` ([`Filter::with`]) so its bundle carries no regex engine.
#[derive(Clone)]
pub struct Pattern(Rc<dyn Fn(&str) -> bool>);

impl Pattern {
    /// A pattern matching the strings `is_match` accepts.
    pub fn new(is_match: impl Fn(&str) -> bool + 'static) -> Self {
        Pattern(Rc::new(is_match))
    }

    /// Does `s` match (anywhere in it, as a regex search)?
    pub fn is_match(&self, s: &str) -> bool {
        (self.0)(s)
    }
}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pattern")
    }
}

/// Focus / ignore regular expressions on function names, file names and mapping files
/// (pprof's `-focus` / `-ignore`). Empty strings mean no filter.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Keep only samples with a frame matching this.
    pub focus: Option<Pattern>,
    /// Drop samples with a frame matching this.
    pub ignore: Option<Pattern>,
}

impl Filter {
    /// The same patterns (clones of the same `Pattern`s, or none): what makes an
    /// earlier answer of [`Index::kept`] valid.
    fn same(&self, other: &Filter) -> bool {
        let eq = |a: &Option<Pattern>, b: &Option<Pattern>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => Rc::ptr_eq(&a.0, &b.0),
            _ => false,
        };
        eq(&self.focus, &other.focus) && eq(&self.ignore, &other.ignore)
    }
}

/// A focus or ignore expression that does not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// "focus" or "ignore".
    pub which: &'static str,
    /// The regex error.
    pub message: String,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is not a valid regular expression: {}",
            self.which, self.message
        )
    }
}

impl std::error::Error for FilterError {}

impl Filter {
    /// No filtering.
    pub fn none() -> Self {
        Self::default()
    }

    /// Compiles focus and ignore expressions ("" = none) with regex-lite (the RE2-like
    /// syntax of pprof's Go `regexp`).
    #[cfg(feature = "regex")]
    pub fn new(focus: &str, ignore: &str) -> Result<Self, FilterError> {
        Self::with(focus, ignore, |s| {
            let re = regex_lite::Regex::new(s).map_err(|e| e.to_string())?;
            Ok(Pattern::new(move |t| re.is_match(t)))
        })
    }

    /// Compiles focus and ignore expressions ("" = none) with `compile`, which returns
    /// the pattern or why the expression is invalid.
    pub fn with(
        focus: &str,
        ignore: &str,
        compile: impl Fn(&str) -> Result<Pattern, String>,
    ) -> Result<Self, FilterError> {
        let compile = |which, s: &str| -> Result<Option<Pattern>, FilterError> {
            if s.is_empty() {
                return Ok(None);
            }
            compile(s)
                .map(Some)
                .map_err(|message| FilterError { which, message })
        };
        Ok(Filter {
            focus: compile("focus", focus)?,
            ignore: compile("ignore", ignore)?,
        })
    }
}

fn positions(ids: Vec<u64>) -> IdIndex {
    IdIndex::lenient(&ids)
}

/// Mapping id → its position in `profile.mapping` (for file names of unsymbolized frames).
fn mapping_positions(profile: &Profile) -> IdIndex {
    positions(profile.mapping.iter().map(|m| m.id).collect())
}

/// [`push_frames`] into a slice sized for them (the counted index), from `pos`: where
/// they end.
#[cfg(not(target_arch = "wasm32"))]
fn write_frames(
    out: &mut [u8],
    mut pos: usize,
    locs: &[u32],
    bytes: &[u8],
    at: &[(u32, u32)],
) -> usize {
    for &l in locs.iter().rev() {
        let (s, n) = at[l as usize];
        out[pos..pos + n as usize].copy_from_slice(&bytes[s as usize..(s + n) as usize]);
        pos += n as usize;
    }
    pos
}

/// Appends a sample's frames root first (its locations are leaf first): each
/// location's frames as [`IndexBuild::over`] encoded them, outermost first.
fn push_frames(out: &mut Vec<u8>, locs: &[u32], bytes: &[u8], at: &[(u32, u32)]) {
    pprof_scan::append_runs_reversed(out, locs, bytes, at);
}
