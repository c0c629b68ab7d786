//! The heap over time in the browser: a serial capture (or several snapshot and
//! profile files) read as one series by the library `heapsnap timeline` uses
//! ([`heapsnap_profile::import::series`]), for the page's chart (`www/series.js`).
//!
//! The chart needs only each point's totals: a capture's frames are decoded for them
//! alone ([`series::outline`]), and a point is decoded in full when it is shown or its
//! areas are computed. The worker that reads a series stays alive while its chart is
//! shown: the files' bytes and the ELF stay here, so a click on a point only decodes
//! and converts that frame.
//!
//! A capture file is not held when the worker streams it ([`SeriesReader::begin_capture`],
//! [`SeriesReader::feed`]: a capture of any size, in memory bounded by its largest
//! frame): a point's frame is then read from the file again when it is shown, the
//! worker handing over the bytes [`SeriesReader::spans`] names
//! ([`SeriesReader::provide`]).

use heapsnap_profile::analysis::{flat_of, growth};
use heapsnap_profile::import::series::{self, CaptureRows, Outline};
use heapsnap_profile::import::{to_profile_limited, Input, Resolved, Symbols};
use heapsnap_profile::limits::{Budget, Limits};
use heapsnap_profile::profile::{Mapping, Profile};
use heapsnap_symbolize::{snapshot_profile, Elf, Resolver};
use prost::Message;
use sampler_core::decoded::Snapshot;
use sampler_core::snapshot::{CaptureStream, Detail};
use serde_json::json;
use std::borrow::Cow;
use std::collections::HashMap;
use wasm_bindgen::prelude::wasm_bindgen;

/// How many growing functions the chart stacks (the rest of the heap is one band).
const AREAS: usize = 6;

/// Files read as one series, with the ELFs that symbolize its snapshots.
#[wasm_bindgen]
pub struct SeriesReader {
    /// The files' names and bytes (kept: a point is decoded from them when shown; none
    /// for a streamed capture).
    names: Vec<String>,
    files: Vec<Vec<u8>>,
    /// The capture being streamed, until [`SeriesReader::read`].
    streaming: Option<(CaptureStream, CaptureRows)>,
    /// Slices of a streamed capture (`(offset, bytes)`) handed over for a request.
    windows: Vec<(usize, Vec<u8>)>,
    /// ELF bytes by name: parsed for each conversion (an [`Elf`] is consumed by the
    /// resolver it serves).
    elves: Vec<(String, Vec<u8>)>,
    outline: Outline,
    /// The last snapshot of the series, decoded in full: what the resolver is matched
    /// to (a capture's frames share mappings), once the areas are asked for.
    reference: Option<Snapshot>,
    /// The functions the chart stacks ([`SeriesReader::growing`]).
    growing: Vec<String>,
    /// Every address resolved so far, and the resolver's mappings.
    seen: HashMap<u64, Resolved>,
    mappings: Option<Vec<(Mapping, String, String)>>,
    /// The size of the input each item came from (its budget, as the CLI counts).
    input_len: u64,
    limits: Limits,
}

impl Default for SeriesReader {
    fn default() -> Self {
        SeriesReader::new()
    }
}

#[wasm_bindgen]
impl SeriesReader {
    /// An empty reader with the CLI's default limits.
    #[wasm_bindgen(constructor)]
    pub fn new() -> SeriesReader {
        SeriesReader {
            names: Vec::new(),
            files: Vec::new(),
            streaming: None,
            windows: Vec::new(),
            elves: Vec::new(),
            outline: Outline::default(),
            reference: None,
            growing: Vec::new(),
            seen: HashMap::new(),
            mappings: None,
            input_len: 0,
            limits: Limits::default(),
        }
    }

    /// Whether `head` (a file's first bytes, an ELF already set aside by the worker)
    /// is a serial capture: read as a series (a chart of every good frame), not as its
    /// last snapshot. The CLI's `timeline` decides by the same test.
    pub fn is_capture(head: &[u8]) -> bool {
        series::looks_like_capture(head)
    }

    /// Adds a file of the series (a capture, a snapshot or a profile), refused past
    /// the `input-size` limit.
    pub fn add_file(&mut self, name: &str, bytes: Vec<u8>) -> Result<(), String> {
        if bytes.len() as u64 > self.limits.input_size {
            return Err(format!(
                "{name}: {} bytes, over the input-size limit of {} bytes",
                bytes.len(),
                self.limits.input_size
            ));
        }
        self.input_len = self.input_len.max(bytes.len() as u64);
        self.names.push(name.to_owned());
        self.files.push(bytes);
        Ok(())
    }

    /// Starts reading the capture `name`, `size` bytes long, a slice at a time
    /// ([`SeriesReader::feed`]): its bytes are not held, only its outline, so its size
    /// has no limit here; a frame is limited as the CLI's streamed `timeline` limits it
    /// (`input-size`).
    pub fn begin_capture(&mut self, name: &str, size: f64) {
        let file = self.names.len();
        self.names.push(name.to_owned());
        self.files.push(Vec::new());
        // Converted frames are counted against a frame's limit, not the capture's size.
        self.input_len = self
            .input_len
            .max((size as u64).min(self.limits.input_size));
        let max_frame = usize::try_from(self.limits.input_size).unwrap_or(usize::MAX);
        let rows = self.outline.begin_capture(name, file);
        self.streaming = Some((CaptureStream::new(max_frame, Detail::Totals), rows));
    }

    /// The next slice of the capture being streamed; the frames it ends are outlined.
    pub fn feed(&mut self, chunk: &[u8]) {
        if let Some((stream, rows)) = &mut self.streaming {
            let outline = &mut self.outline;
            stream.push(chunk, |f| outline.add_frame(rows, f));
        }
    }

    /// Where the frames of the points `from..to` of a streamed capture are, as
    /// `[start, end, start, end, …]` byte ranges of the capture to read and hand over
    /// ([`SeriesReader::provide`]) before asking for those points; frames closer than
    /// 1 MiB share a range. Empty when the series holds its bytes.
    pub fn spans(&self, from: usize, to: usize) -> Vec<f64> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for i in from..to.min(self.outline.rows.len()) {
            let Some((file, offset, len)) = self.outline.frame_span(i) else {
                continue;
            };
            if !self.files.get(file).is_some_and(Vec::is_empty) {
                continue;
            }
            match out.last_mut() {
                Some(last) if offset >= last.1 && offset - last.1 <= 1 << 20 => {
                    last.1 = last.1.max(offset + len)
                }
                _ => out.push((offset, offset + len)),
            }
        }
        out.iter()
            .flat_map(|&(a, b)| [a as f64, b as f64])
            .collect()
    }

    /// Hands over the bytes of a streamed capture from `offset` on (a range
    /// [`SeriesReader::spans`] named), for the requests that follow.
    pub fn provide(&mut self, offset: f64, bytes: Vec<u8>) {
        self.windows.push((offset as usize, bytes));
    }

    /// Lets go of the bytes handed over.
    pub fn forget(&mut self) {
        self.windows = Vec::new();
    }

    /// Adds an ELF to symbolize the snapshots with (checked that it parses now, so a
    /// bad ELF is named before the chart is drawn).
    pub fn add_elf(&mut self, name: &str, bytes: Vec<u8>) -> Result<(), String> {
        Elf::parse(name, &bytes).map_err(|e| e.to_string())?;
        self.elves.push((name.to_owned(), bytes));
        Ok(())
    }

    /// Reads the files added as one series and returns what the chart draws, as JSON:
    /// per good point its name, cycle, offset, in-use bytes and objects (exact or
    /// sampled) and non-zero drop counters; the bad frames with their offsets. A series
    /// without a good point is an error that says so, with the last bad frame's reason.
    /// A capture's frames are decoded for their totals only (the points are the same).
    pub fn read(&mut self) -> Result<String, String> {
        if let Some((stream, mut rows)) = self.streaming.take() {
            let outline = &mut self.outline;
            stream.finish(|f| outline.add_frame(&mut rows, f));
            outline.end_capture(rows);
            outline.check_not_empty().map_err(|e| e.to_string())?;
        } else {
            self.outline = series::outline(
                self.names
                    .iter()
                    .zip(&self.files)
                    .map(|(n, b)| (n.as_str(), b.as_slice())),
                &self.limits,
            )
            .map_err(|e| e.to_string())?;
        }
        // Written as it goes (no tree of values for 10,000 points).
        let o = &self.outline;
        let mut out = Vec::with_capacity(o.rows.len() * 160 + o.bad.len() * 200 + 64);
        put(&mut out, "{", "frames", &o.frames);
        out.extend_from_slice(b",\"points\":[");
        for (i, row) in o.rows.iter().enumerate() {
            let p = &row.point;
            put(&mut out, if i == 0 { "{" } else { ",{" }, "name", &row.name);
            put(&mut out, ",", "offset", &row.offset);
            put(&mut out, ",", "cycle", &p.cycle);
            put(&mut out, ",", "time", &p.timestamp.map(|t| t.seconds()));
            put(&mut out, ",", "bytes", &p.in_use.map(|u| u.bytes));
            put(&mut out, ",", "objects", &p.in_use.map(|u| u.objects));
            put(&mut out, ",", "exact", &p.in_use.is_some_and(|u| u.exact));
            out.extend_from_slice(b",\"drops\":{");
            for (k, (name, v)) in p.drops.iter().enumerate() {
                put(&mut out, if k == 0 { "" } else { "," }, name, v);
            }
            out.extend_from_slice(b"}}");
        }
        out.extend_from_slice(b"],\"bad\":[");
        for (i, b) in o.bad.iter().enumerate() {
            put(&mut out, if i == 0 { "{" } else { ",{" }, "name", &b.name);
            put(&mut out, ",", "offset", &b.offset);
            put(&mut out, ",", "len", &b.len);
            put(&mut out, ",", "error", &b.error);
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
        String::from_utf8(out).map_err(|e| e.to_string())
    }

    /// The point `index` as a pprof protobuf (not gzipped), symbolized with the ELFs
    /// added, as `heapsnap convert FILE@index --elf ELF` makes it.
    pub fn profile(&self, index: usize) -> Result<Vec<u8>, String> {
        Ok(self.item_profile(index)?.encode_to_vec())
    }

    /// The functions that grew most from the first point to the last (the rows of
    /// `heapsnap timeline`'s growth list), as JSON `{unit, functions}`: the chart's
    /// stacked areas, whose values [`SeriesReader::areas`] gives a range at a time.
    pub fn growing(&mut self) -> Result<String, String> {
        let n = self.outline.rows.len();
        if n == 0 {
            return Err("the series is empty".into());
        }
        let (a, b) = (self.item_profile(0)?, self.item_profile(n - 1)?);
        self.keep_reference()?;
        let (rows, unit) = growth(&a, &b, "inuse_space", AREAS).map_err(|e| e.to_string())?;
        self.growing = rows.into_iter().map(|r| r.name).collect();
        Ok(json!({ "unit": unit, "functions": self.growing }).to_string())
    }

    /// Each growing function's in-use bytes and objects (its flat values in the point's
    /// top tables) at the points `from..to`, as JSON `{"bytes": [[per point] per
    /// function], "objects": …}` (`objects` null when a point has no `inuse_objects`:
    /// the chart then stacks bytes only). A range at a
    /// time, so the worker answers clicks between ranges; the addresses resolved are
    /// kept, so the ELF is read again only for an address not seen before.
    pub fn areas(&mut self, from: usize, to: usize) -> Result<String, String> {
        let to = to.min(self.outline.rows.len());
        self.keep_reference()?;
        let mut values = vec![Vec::with_capacity(to.saturating_sub(from)); self.growing.len()];
        let mut objects = Some(values.clone());
        let mut symbols = Cached {
            seen: &mut self.seen,
            mappings: &mut self.mappings,
            reference: self.reference.as_ref(),
            elves: &self.elves,
            inner: None,
        };
        if symbols.mappings.is_none() {
            let m = symbols.resolver().map(|r| r.mappings());
            *symbols.mappings = m;
        }
        for i in from..to {
            let name = &self.outline.rows[i].name;
            let input = input_of(&self.outline, &self.files, &self.windows, i)?;
            let p = match &*input {
                Input::Snapshot { snapshot, .. } => {
                    let mut budget = Budget::new(&self.limits, self.input_len);
                    Cow::Owned(
                        to_profile_limited(snapshot, &mut symbols, &mut |_, _| {}, &mut budget)
                            .map_err(|e| format!("{name}: {e}"))?,
                    )
                }
                Input::Profile(p) => Cow::Borrowed(p),
            };
            if let Some(e) = symbols.failed() {
                return Err(e);
            }
            let flat =
                flat_of(&p, "inuse_space", &self.growing).map_err(|e| format!("{name}: {e}"))?;
            for (v, f) in values.iter_mut().zip(flat) {
                v.push(f);
            }
            objects = objects
                .zip(flat_of(&p, "inuse_objects", &self.growing).ok())
                .map(|(mut o, flat)| {
                    for (v, f) in o.iter_mut().zip(flat) {
                        v.push(f);
                    }
                    o
                });
        }
        Ok(json!({ "bytes": values, "objects": objects }).to_string())
    }
}

impl SeriesReader {
    fn parse_elves(&self) -> Result<Vec<Elf>, String> {
        parse_elves(&self.elves)
    }

    /// The input of the point `index`: a capture's frame decoded in full.
    fn input(&self, index: usize) -> Result<Cow<'_, Input>, String> {
        input_of(&self.outline, &self.files, &self.windows, index)
    }

    /// Decodes the last snapshot point, once: what the resolver of
    /// [`SeriesReader::areas`] is matched to (a profile has no addresses to resolve).
    fn keep_reference(&mut self) -> Result<(), String> {
        if self.reference.is_some() {
            return Ok(());
        }
        let last = self
            .outline
            .rows
            .iter()
            .rposition(|r| r.point.cycle.is_some());
        if let Some(i) = last {
            if let Input::Snapshot { snapshot, .. } = self.input(i)?.into_owned() {
                self.reference = Some(snapshot);
            }
        }
        Ok(())
    }

    /// A point as `heapsnap diff` reads it: symbolized. (`diff` also applies pprof's
    /// frame pruning, which changes nothing here: only legacy text profiles name
    /// frames to drop, and a capture holds heapsnap snapshots.)
    pub fn item_profile(&self, index: usize) -> Result<Profile, String> {
        let name = &self
            .outline
            .rows
            .get(index)
            .ok_or_else(|| {
                format!(
                    "no point {index}: the series has {}",
                    self.outline.rows.len()
                )
            })?
            .name;
        match self.input(index)?.into_owned() {
            Input::Snapshot { snapshot, .. } => snapshot_profile(
                &snapshot,
                self.input_len,
                self.parse_elves()?,
                None,
                false,
                &self.limits,
                &mut |_, _| {},
            )
            .map_err(|e| format!("{name}: {e}")),
            Input::Profile(p) => Ok(p),
        }
    }
}

/// Appends `SEP"KEY":VALUE` to the JSON being written.
fn put<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, sep: &str, key: &str, value: &T) {
    out.extend_from_slice(sep.as_bytes());
    // Neither can fail: a string key and a value of plain data into memory.
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The input of the point `index`: from the bytes held, or, for a streamed capture
/// (its bytes not held), from the slice handed over that holds its frame.
fn input_of<'s>(
    outline: &'s Outline,
    files: &[Vec<u8>],
    windows: &[(usize, Vec<u8>)],
    index: usize,
) -> Result<Cow<'s, Input>, String> {
    let streamed = outline
        .frame_span(index)
        .filter(|(file, _, _)| files.get(*file).is_some_and(Vec::is_empty));
    let got = match streamed {
        Some((_, offset, len)) => {
            let (base, bytes) = windows
                .iter()
                .find(|(b, w)| *b <= offset && offset + len <= b + w.len())
                .ok_or_else(|| {
                    format!(
                        "point {index}: its frame (bytes {offset}..{}) was not read",
                        offset + len
                    )
                })?;
            outline.input_in(index, bytes, *base)
        }
        None => outline.input(index, files),
    };
    got.map_err(|e| e.to_string())
}

fn parse_elves(elves: &[(String, Vec<u8>)]) -> Result<Vec<Elf>, String> {
    elves
        .iter()
        .map(|(n, b)| Elf::parse(n, b).map_err(|e| e.to_string()))
        .collect()
}

/// A symbolizer that remembers each address it resolved (the points of one series
/// share nearly all their return addresses), and builds the resolver (parsing the ELF)
/// only for an address it has not seen.
struct Cached<'a, 's> {
    seen: &'a mut HashMap<u64, Resolved>,
    /// The resolver's mappings, once known.
    mappings: &'a mut Option<Vec<(Mapping, String, String)>>,
    /// The snapshot the resolver is matched to (a capture's frames share mappings).
    reference: Option<&'s Snapshot>,
    elves: &'a [(String, Vec<u8>)],
    inner: Option<Result<Resolver<'s>, String>>,
}

impl<'s> Cached<'_, 's> {
    fn resolver(&mut self) -> Option<&mut Resolver<'s>> {
        if self.inner.is_none() {
            let made = match self.reference {
                Some(s) => parse_elves(self.elves)
                    .and_then(|e| Resolver::new(s, e, None).map_err(|e| e.to_string())),
                None => Err("no snapshot in the series".into()),
            };
            self.inner = Some(made);
        }
        self.inner.as_mut().and_then(|r| r.as_mut().ok())
    }

    /// Why the resolver could not be built, if it could not.
    fn failed(&self) -> Option<String> {
        self.inner.as_ref().and_then(|r| r.as_ref().err().cloned())
    }
}

impl Symbols for Cached<'_, '_> {
    fn mappings(&self) -> Vec<(Mapping, String, String)> {
        self.mappings.clone().unwrap_or_default()
    }
    fn resolve(&mut self, a: u64) -> Resolved {
        if let Some(r) = self.seen.get(&a) {
            return r.clone();
        }
        let r = self.resolver().map(|r| r.resolve(a)).unwrap_or_default();
        self.seen.insert(a, r.clone());
        r
    }
}
