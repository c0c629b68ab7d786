//! The heap over time: a serial capture read as every good frame in order (not only
//! the last one), or a set of snapshot and profile files read as one series, with
//! what each point measures (in-use bytes and objects, the non-zero drop counters).
//!
//! One model for the CLI's `timeline` and `diff CAPTURE@N`, and for the viewer.

use super::inspect;
use crate::import::{guess_limited, Input, InputError};
use crate::limits::Limits;
use sampler_core::decoded::Snapshot;
use sampler_core::snapshot::{self, Timestamp};
use std::borrow::Cow;

/// A time series of snapshots or profiles, oldest first, and what was lost reading it.
#[derive(Debug, Default)]
pub struct Series {
    /// The good inputs, in series order.
    pub items: Vec<Item>,
    /// Frames of the capture(s) that were not valid snapshots, in capture order.
    pub bad: Vec<BadFrame>,
    /// Frames found in the capture(s) read, good and bad (0 when none was a capture).
    pub frames: usize,
}

/// One point of a [`Series`].
#[derive(Debug)]
pub struct Item {
    /// Where it came from: the file's name (the caller's), for a capture's frame
    /// followed by `@` and its index among the capture's good frames.
    pub name: String,
    /// Byte offset of the frame in its capture; `None` for a plain file.
    pub offset: Option<usize>,
    /// The snapshot or profile.
    pub input: Input,
}

/// A frame of a capture that is not a valid snapshot (garbage, torn, corrupt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadFrame {
    /// The capture's name (the caller's).
    pub name: String,
    /// Byte offset of the frame's first (COBS-encoded) byte in the capture.
    pub offset: usize,
    /// Encoded length, without the `0x00` delimiter.
    pub len: usize,
    /// Why it is not a snapshot (its offsets are in the capture).
    pub error: String,
}

/// Why a frame of a series could not be picked by index.
#[derive(Debug, thiserror::Error)]
#[error("no good frame @{index}: {name} has {good} good frame(s){range}")]
pub struct PickError {
    /// The series' name.
    pub name: String,
    /// The index asked for.
    pub index: i64,
    /// Good frames in the series.
    pub good: usize,
    /// The valid indexes, for the message.
    range: String,
}

impl Series {
    /// The good item at `index` (0 = the first; negative counts from the end, -1 = the
    /// last), as `diff CAPTURE@N` picks frames; `name` names the series in the error.
    pub fn pick(&self, name: &str, index: i64) -> Result<&Item, PickError> {
        let n = self.items.len();
        let at = if index < 0 {
            usize::try_from(index.unsigned_abs())
                .ok()
                .and_then(|back| n.checked_sub(back))
        } else {
            usize::try_from(index).ok().filter(|&i| i < n)
        };
        at.and_then(|i| self.items.get(i)).ok_or_else(|| PickError {
            name: name.to_owned(),
            index,
            good: n,
            range: match n {
                0 => String::new(),
                n => format!(" (@0..@{}, or @-{n}..@-1 from the end)", n - 1),
            },
        })
    }

    /// Takes the item at `index` out of the series (see [`Series::pick`]).
    pub fn take(mut self, name: &str, index: i64) -> Result<Item, PickError> {
        self.pick(name, index)?;
        let n = self.items.len() as i64;
        let i = if index < 0 { n + index } else { index };
        Ok(self.items.swap_remove(i as usize))
    }
}

/// Every frame of a raw serial capture (`name` names it in the items and bad frames):
/// the good ones in capture order, the bad ones with their offsets. Never fails: a
/// capture with no good frame (or no frame at all) is a series without items.
pub fn capture_series(name: &str, bytes: &[u8]) -> Series {
    let capture = snapshot::decode_frames(bytes);
    let frames = capture.frames.len();
    let bad_count = capture.bad_count();
    let mut s = Series {
        frames,
        ..Series::default()
    };
    for f in capture.frames {
        match frame_item(name, s.items.len(), f) {
            Ok(mut item) => {
                if let Input::Snapshot {
                    bad_frames,
                    frames: n,
                    ..
                } = &mut item.input
                {
                    (*bad_frames, *n) = (bad_count, frames);
                }
                s.items.push(item);
            }
            Err(bad) => s.bad.push(bad),
        }
    }
    s
}

/// One frame of the capture `name` as a series sees it: the good frame number `good`
/// (its name `name@good`), or a bad frame.
fn frame_item(name: &str, good: usize, f: snapshot::CaptureFrame) -> Result<Item, BadFrame> {
    match f.result {
        Ok(snapshot) => Ok(Item {
            name: format!("{name}@{good}"),
            offset: Some(f.offset),
            input: Input::Snapshot {
                snapshot,
                bad_frames: 0,
                frames: 0,
            },
        }),
        Err(e) => Err(BadFrame {
            name: name.to_owned(),
            offset: f.offset,
            len: f.len,
            error: e.to_string(),
        }),
    }
}

/// A series as `heapsnap timeline` shows it: every good point's measure, but the
/// inputs themselves only of the first and the last point (what the growth from one
/// to the other needs), so a capture streamed frame by frame
/// ([`Points::stream_capture`]) is read in memory bounded by its largest frame, not
/// by its size.
#[derive(Debug, Default)]
pub struct Points {
    /// One row per good point, in series order.
    pub rows: Vec<Row>,
    /// Frames of the capture(s) that were not valid snapshots, in capture order.
    pub bad: Vec<BadFrame>,
    /// Frames found in the capture(s) read, good and bad (0 when none was a capture).
    pub frames: usize,
    /// The first good point.
    pub first: Option<Item>,
    /// The last good point, when there are two or more.
    pub last: Option<Item>,
}

/// One good point of [`Points`]: where it came from and what it measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// As [`Item::name`].
    pub name: String,
    /// As [`Item::offset`].
    pub offset: Option<usize>,
    /// What it measures.
    pub point: Point,
}

impl Points {
    /// Adds the next good point of the series.
    pub fn push(&mut self, item: Item) {
        self.rows.push(Row {
            name: item.name.clone(),
            offset: item.offset,
            point: point(&item.input),
        });
        if self.first.is_none() {
            self.first = Some(item);
        } else {
            self.last = Some(item);
        }
    }

    /// The points of a series read whole ([`read_series`]), in its order.
    pub fn from_series(s: Series) -> Points {
        let mut p = Points {
            bad: s.bad,
            frames: s.frames,
            ..Points::default()
        };
        for item in s.items {
            p.push(item);
        }
        p
    }

    /// Reads the capture `name` from `input` frame by frame ([`snapshot::decode_frames_from`]):
    /// each good frame is a point, each bad one is kept with its offset. Only the frame
    /// being read is held; a frame longer than `max_frame` bytes is a bad frame saying
    /// so (the memory bound). Returns the bytes read; fails only on an I/O error.
    pub fn stream_capture(
        &mut self,
        name: &str,
        input: impl std::io::Read,
        max_frame: usize,
    ) -> Result<u64, SeriesError> {
        let (mut good, mut frames, bad_before) = (0usize, 0usize, self.bad.len());
        let read = snapshot::decode_frames_from(input, max_frame, |f| {
            frames += 1;
            match frame_item(name, good, f) {
                Ok(item) => {
                    good += 1;
                    self.push(item);
                }
                Err(bad) => self.bad.push(bad),
            }
        })
        .map_err(|error| SeriesError::Io {
            name: name.to_owned(),
            error,
        })?;
        self.frames += frames;
        // The ends now know their capture's counts.
        let bad_count = self.bad.len() - bad_before;
        for item in [&mut self.first, &mut self.last].into_iter().flatten() {
            if let Input::Snapshot {
                bad_frames,
                frames: n,
                ..
            } = &mut item.input
            {
                if item.offset.is_some()
                    && item
                        .name
                        .strip_prefix(name)
                        .is_some_and(|r| r.starts_with('@'))
                {
                    (*bad_frames, *n) = (bad_count, frames);
                }
            }
        }
        Ok(read)
    }

    /// An error when the series has no good point (every frame bad: how many, and the
    /// last one's error), as [`read_series`] says it.
    pub fn check_not_empty(&self) -> Result<(), SeriesError> {
        if self.rows.is_empty() {
            return Err(no_good_point(&self.bad, self.frames));
        }
        Ok(())
    }
}

/// Reads files as one series: a serial capture gives every good frame (in capture
/// order), any other input (snapshot, pprof, what [`guess_limited`] reads) one item.
/// Several plain files that are all snapshots are ordered by their device timestamp
/// when all carry one of the same clock (same ticks per second), else by their cycle
/// number (a stable sort, so equal keys keep the order given); otherwise, or when a
/// capture is among them, the order given is kept: a capture's order is the device's
/// stream, and a device reset restarts its clock and its cycles.
///
/// An error names the file that could not be read, or says that the series has no
/// good item (every frame bad, with the last frame's error).
pub fn read_series<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    limits: &Limits,
) -> Result<Series, SeriesError> {
    let mut s = Series::default();
    let mut capture = false;
    for (name, bytes) in files {
        if looks_like_capture(bytes) {
            let c = capture_series(name, bytes);
            capture = true;
            s.frames += c.frames;
            s.items.extend(c.items);
            s.bad.extend(c.bad);
        } else {
            let input = guess_limited(bytes, limits).map_err(|e| SeriesError::Input {
                name: name.to_owned(),
                error: e,
            })?;
            s.items.push(Item {
                name: name.to_owned(),
                offset: None,
                input,
            });
        }
    }
    if s.items.is_empty() {
        return Err(no_good_point(&s.bad, s.frames));
    }
    let points: Vec<Point> = s.items.iter().map(|i| point(&i.input)).collect();
    if let (false, Some(order)) = (capture, order_of(points.iter())) {
        let mut items: Vec<Option<Item>> = s.items.into_iter().map(Some).collect();
        s.items = order.into_iter().filter_map(|i| items[i].take()).collect();
    }
    Ok(s)
}

/// The error of a series without a good point: how many frames, all bad, and the last
/// one's error.
fn no_good_point(bad: &[BadFrame], frames: usize) -> SeriesError {
    SeriesError::Input {
        name: bad.first().map_or(String::new(), |b| b.name.clone()),
        error: InputError::NoGoodFrame {
            frames,
            last: bad.last().map_or(String::new(), |b| b.error.clone()),
        },
    }
}

/// The series order of plain files' points (indexes into them), when they can be
/// ordered: by device timestamp when all carry one of the same clock (same ticks per
/// second), else by cycle when all are snapshots (a stable sort: equal keys keep the
/// order given); `None` (the order given) otherwise.
fn order_of<'p>(points: impl Iterator<Item = &'p Point> + Clone) -> Option<Vec<usize>> {
    let cycles: Option<Vec<u64>> = points.clone().map(|p| p.cycle).collect();
    let stamps: Option<Vec<Timestamp>> = points.map(|p| p.timestamp).collect();
    let keys = match stamps {
        Some(t)
            if t.iter()
                .all(|x| x.ticks_per_second == t[0].ticks_per_second) =>
        {
            Some(t.iter().map(|t| t.ticks).collect::<Vec<u64>>())
        }
        _ => cycles,
    }?;
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    Some(order)
}

/// A series read for its chart: every point's measure from a decode of each capture
/// frame that keeps only its totals ([`snapshot::Detail::Totals`]: frames good and bad
/// as a full read finds them), and where each point's input is, decoded in full only
/// when asked ([`Outline::input`]). What the viewer holds for a capture of thousands
/// of snapshots: its bytes and this, not thousands of decoded snapshots.
#[derive(Debug, Default)]
pub struct Outline {
    /// One row per good point, in series order.
    pub rows: Vec<Row>,
    /// Frames of the capture(s) that were not valid snapshots, in capture order.
    pub bad: Vec<BadFrame>,
    /// Frames found in the capture(s) read, good and bad (0 when none was a capture).
    pub frames: usize,
    /// Where each row's input is, by row.
    at: Vec<At>,
}

/// Where the input of a row of an [`Outline`] is.
#[derive(Debug)]
enum At {
    /// A good frame of the capture `file` (at the row's offset, `len` bytes long), whose
    /// capture has `frames` frames, `bad` of them bad.
    Frame {
        file: usize,
        len: usize,
        frames: usize,
        bad: usize,
    },
    /// A whole file (a snapshot or profile), read (boxed: a frame's place is small).
    Whole(Box<Input>),
}

/// Reads files as one series for a chart, as [`read_series`] reads them (the same
/// points, bad frames, order and errors), a capture's frames decoded for their totals
/// only.
pub fn outline<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    limits: &Limits,
) -> Result<Outline, SeriesError> {
    let mut o = Outline::default();
    let mut capture = false;
    for (file, (name, bytes)) in files.into_iter().enumerate() {
        if !looks_like_capture(bytes) {
            let input = guess_limited(bytes, limits).map_err(|e| SeriesError::Input {
                name: name.to_owned(),
                error: e,
            })?;
            o.rows.push(Row {
                name: name.to_owned(),
                offset: None,
                point: point(&input),
            });
            o.at.push(At::Whole(Box::new(input)));
            continue;
        }
        capture = true;
        let mut c = o.begin_capture(name, file);
        snapshot::decode_frames_with(bytes, snapshot::Detail::Totals, |f| o.add_frame(&mut c, f));
        o.end_capture(c);
    }
    o.check_not_empty()?;
    if let (false, Some(order)) = (capture, order_of(o.rows.iter().map(|r| &r.point))) {
        let mut rows: Vec<Option<(Row, At)>> =
            o.rows.drain(..).zip(o.at.drain(..)).map(Some).collect();
        for i in order {
            if let Some((row, at)) = rows[i].take() {
                o.rows.push(row);
                o.at.push(at);
            }
        }
    }
    Ok(o)
}

/// A capture being added to an [`Outline`] a frame at a time ([`Outline::begin_capture`]).
#[derive(Debug)]
pub struct CaptureRows {
    name: String,
    file: usize,
    /// The first row and bad frame of this capture, and its frames so far.
    first: usize,
    bad_before: usize,
    frames: usize,
}

impl Outline {
    /// Starts adding the capture `name`, the file `file` of the series (its index in
    /// the bytes later given to [`Outline::input`]). Its frames come in capture order
    /// ([`Outline::add_frame`]: from [`snapshot::decode_frames_with`] over the whole
    /// capture, or from a [`snapshot::CaptureStream`] fed its slices), then
    /// [`Outline::end_capture`].
    pub fn begin_capture(&self, name: &str, file: usize) -> CaptureRows {
        CaptureRows {
            name: name.to_owned(),
            file,
            first: self.rows.len(),
            bad_before: self.bad.len(),
            frames: 0,
        }
    }

    /// The next frame of the capture `c`: a good one is a row (its totals, where it is),
    /// a bad one is kept with its offset and error.
    pub fn add_frame(&mut self, c: &mut CaptureRows, f: snapshot::CaptureFrame) {
        c.frames += 1;
        let len = f.len;
        match frame_item(&c.name, self.rows.len() - c.first, f) {
            Ok(item) => {
                self.rows.push(Row {
                    point: point(&item.input),
                    name: item.name,
                    offset: item.offset,
                });
                self.at.push(At::Frame {
                    file: c.file,
                    len,
                    frames: 0,
                    bad: 0,
                });
            }
            Err(bad) => self.bad.push(bad),
        }
    }

    /// Ends the capture `c`: its rows learn its counts of frames and bad frames.
    pub fn end_capture(&mut self, c: CaptureRows) {
        self.frames += c.frames;
        let bad_count = self.bad.len() - c.bad_before;
        for at in &mut self.at[c.first..] {
            if let At::Frame { frames: f, bad, .. } = at {
                (*f, *bad) = (c.frames, bad_count);
            }
        }
    }

    /// An error when the series has no good point (every frame bad: how many, and the
    /// last one's error), as [`outline`] says it.
    pub fn check_not_empty(&self) -> Result<(), SeriesError> {
        if self.rows.is_empty() {
            return Err(no_good_point(&self.bad, self.frames));
        }
        Ok(())
    }

    /// Where the frame of the row `index` is: `(file, offset, len)` of its encoded
    /// bytes in its capture; `None` for a whole file (or no such row). What a reader
    /// that does not hold a capture reads before [`Outline::input_in`].
    pub fn frame_span(&self, index: usize) -> Option<(usize, usize, usize)> {
        match (self.rows.get(index)?, self.at.get(index)?) {
            (row, At::Frame { file, len, .. }) => Some((*file, row.offset.unwrap_or(0), *len)),
            (_, At::Whole(_)) => None,
        }
    }

    /// The input of the row `index` (of `files`, the bytes given to [`outline`] in its
    /// order): a capture's frame decoded in full, a whole file as read.
    pub fn input<'s, B: AsRef<[u8]>>(
        &'s self,
        index: usize,
        files: &[B],
    ) -> Result<Cow<'s, Input>, SeriesError> {
        let file = self.frame_span(index).map_or(0, |(f, _, _)| f);
        let bytes = files.get(file).map_or(&[][..], |b| b.as_ref());
        self.input_in(index, bytes, 0)
    }

    /// [`Outline::input`] with the capture's bytes from `base` on in `window` (a
    /// capture too big to hold, read a slice at a time: [`Outline::frame_span`] says
    /// which). A whole file's row ignores the window.
    pub fn input_in<'s>(
        &'s self,
        index: usize,
        window: &[u8],
        base: usize,
    ) -> Result<Cow<'s, Input>, SeriesError> {
        let (row, at) =
            self.rows
                .get(index)
                .zip(self.at.get(index))
                .ok_or(SeriesError::NoPoint {
                    index,
                    points: self.rows.len(),
                })?;
        match at {
            At::Whole(input) => Ok(Cow::Borrowed(&**input)),
            At::Frame {
                len, frames, bad, ..
            } => {
                let snapshot =
                    snapshot::decode_frame_in(window, base, row.offset.unwrap_or(0), *len)
                        .map_err(|e| SeriesError::Input {
                            name: row.name.clone(),
                            error: e.into(),
                        })?;
                Ok(Cow::Owned(Input::Snapshot {
                    snapshot,
                    bad_frames: *bad,
                    frames: *frames,
                }))
            }
        }
    }
}

/// Do these bytes (a whole input, or its first bytes) look like a serial capture of
/// COBS-framed snapshots rather than a snapshot or profile file? What decides how a
/// series reads an input.
pub fn looks_like_capture(bytes: &[u8]) -> bool {
    !bytes.is_empty() && (super::CAPTURE.sniff)(bytes)
}

/// Why files could not be read as a series.
#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    /// A point asked for by index that the series does not have.
    #[error("no point {index}: the series has {points}")]
    NoPoint {
        /// The index asked for.
        index: usize,
        /// Points in the series.
        points: usize,
    },
    /// A capture streamed from a file or pipe could not be read further.
    #[error("{name}: read failed: {error}")]
    Io {
        /// The file.
        name: String,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// One of the files (named) could not be read, or nothing good was in them.
    #[error("{name}: {error}")]
    Input {
        /// The file.
        name: String,
        /// Why.
        #[source]
        error: InputError,
    },
}

/// What one point of a series measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The snapshot's record cycle; `None` for a profile.
    pub cycle: Option<u64>,
    /// The device's clock at the snapshot, when its integrator supplied one.
    pub timestamp: Option<Timestamp>,
    /// Bytes and objects in use; `None` for a profile without in-use sample types.
    pub in_use: Option<InUse>,
    /// The drop/overflow counters that are not zero, by name (a snapshot's; none
    /// for a profile).
    pub drops: Vec<(&'static str, u64)>,
}

/// Memory in use at one point, and how it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InUse {
    /// Bytes in use.
    pub bytes: i64,
    /// Objects in use.
    pub objects: i64,
    /// `true`: the device's exact heap totals (it counted every call); `false`: the
    /// sampled estimate, unsampled as the profile's `inuse_*` values are.
    pub exact: bool,
}

/// What `input` measures: a snapshot's exact heap totals when its device counted them,
/// else the sum of its buckets' unsampled in-use values (what `heapsnap top` totals);
/// a profile's `inuse_space`/`inuse_objects` (or legacy `space`/`objects`) sums.
pub fn point(input: &Input) -> Point {
    match input {
        Input::Snapshot { snapshot, .. } => snapshot_point(snapshot),
        Input::Profile(p) => {
            let sum = |name: &str| {
                let i = p.sample_index(name).ok()?;
                Some(p.sample.iter().fold(0i64, |acc, s| {
                    acc.saturating_add(s.value.get(i).copied().unwrap_or(0))
                }))
            };
            let in_use = match (sum("inuse_space"), sum("inuse_objects")) {
                (Some(bytes), Some(objects)) => Some(InUse {
                    bytes,
                    objects,
                    exact: false,
                }),
                _ => None,
            };
            Point {
                cycle: None,
                timestamp: None,
                in_use,
                drops: Vec::new(),
            }
        }
    }
}

fn snapshot_point(s: &Snapshot) -> Point {
    let in_use = match s.counters.heap() {
        Some(h) => InUse {
            bytes: i64::try_from(h.in_use_bytes).unwrap_or(i64::MAX),
            objects: i64::try_from(h.in_use_objects()).unwrap_or(i64::MAX),
            exact: true,
        },
        None => {
            let (mut objects, mut bytes) = (0i64, 0i64);
            for b in &s.buckets {
                let [_, _, o, by] = super::bucket_values(b, s.sample_rate);
                objects = objects.saturating_add(o);
                bytes = bytes.saturating_add(by);
            }
            InUse {
                bytes,
                objects,
                exact: false,
            }
        }
    };
    Point {
        cycle: Some(s.cycle),
        timestamp: s.timestamp,
        in_use: Some(in_use),
        drops: inspect::drop_counters(s)
            .filter(|&(name, v)| v != 0 && name != "samples")
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_core::decoded::{Bucket, Stack};
    use sampler_core::snapshot::encode_framed_to_vec;

    fn snap(cycle: u64, in_use: u64) -> Snapshot {
        let mut s = Snapshot {
            version: snapshot::VERSION_SHARED,
            word_size: 4,
            sample_rate: 1,
            cycle,
            stacks: vec![Stack {
                id: 1,
                frames: vec![0x1000, 0x2000],
            }],
            ..Snapshot::default()
        };
        let mut b = Bucket {
            stack_id: 1,
            size: 16,
            ..Bucket::default()
        };
        b.active.allocs = in_use / 16;
        b.active.alloc_bytes = in_use;
        s.buckets.push(b);
        s
    }

    fn framed(s: &Snapshot) -> Vec<u8> {
        encode_framed_to_vec(s).unwrap()
    }

    /// The snapshot's cycle number, `None` for a profile.
    fn cycle(input: &Input) -> Option<u64> {
        point(input).cycle
    }

    fn cycles(s: &Series) -> Vec<u64> {
        s.items.iter().map(|i| cycle(&i.input).unwrap()).collect()
    }

    #[test]
    fn every_good_frame_in_order_and_bad_ones_at_their_offsets() {
        let mut cap = b"boot banner\r\n\0".to_vec();
        let good1 = framed(&snap(5, 160));
        cap.extend(&good1);
        let corrupt_at = cap.len();
        let mut bad = framed(&snap(6, 320));
        let mid = bad.len() / 2;
        bad[mid] ^= 0x55;
        cap.extend(&bad);
        cap.extend(framed(&snap(4, 480)));
        let torn_at = cap.len();
        let torn = framed(&snap(8, 640));
        cap.extend(&torn[..torn.len() / 2]);

        let s = read_series([("cap", cap.as_slice())], &Limits::default()).unwrap();
        // Capture order, not cycle order: the device's order is the stream's.
        assert_eq!(cycles(&s), [5, 4]);
        assert_eq!(s.items[0].offset, Some(14));
        assert_eq!(s.items[1].name, "cap@1");
        let offsets: Vec<usize> = s.bad.iter().map(|b| b.offset).collect();
        assert_eq!(offsets, [0, corrupt_at, torn_at], "{:?}", s.bad);
        assert!(s.bad[2].error.contains("torn"), "{}", s.bad[2].error);
        assert_eq!(s.frames, 5);
        let p = point(&s.items[1].input);
        assert_eq!(
            p.in_use,
            Some(InUse {
                bytes: 480,
                objects: 30,
                exact: false
            })
        );
        assert!(p.drops.is_empty());
    }

    #[test]
    fn empty_capture_and_all_bad_are_errors_naming_the_frames() {
        assert!(capture_series("c", &[]).items.is_empty());
        assert_eq!(capture_series("c", &[]).frames, 0);
        // Frames, all bad (every one corrupt): no item, the error says how many.
        let mut cap = Vec::new();
        for c in 0..3 {
            let mut f = framed(&snap(c, 16));
            let at = f.len() - 3;
            f[at] ^= 0x01;
            cap.extend(f);
        }
        let s = capture_series("c", &cap);
        assert!(s.items.is_empty());
        assert_eq!(s.bad.len(), 3);
        let e = read_series([("c", cap.as_slice())], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c: no valid snapshot"), "{e}");
        assert!(e.contains("3 frame(s), all bad"), "{e}");
        // Nothing at all.
        let e = read_series([("e", &b""[..])], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("e: empty input"), "{e}");
    }

    #[test]
    fn files_are_ordered_by_cycle_when_all_are_snapshots() {
        let (a, b, c) = (
            snap(9, 16).encode().unwrap(),
            snap(2, 32).encode().unwrap(),
            snap(9, 48).encode().unwrap(),
        );
        let s = read_series(
            [
                ("a", a.as_slice()),
                ("b", b.as_slice()),
                ("c", c.as_slice()),
            ],
            &Limits::default(),
        )
        .unwrap();
        let names: Vec<&str> = s.items.iter().map(|i| i.name.as_str()).collect();
        // Equal cycles keep the order given.
        assert_eq!(names, ["b", "a", "c"]);
        assert!(s.bad.is_empty());
        assert_eq!(s.frames, 0);
    }

    #[test]
    fn files_with_timestamps_of_one_clock_are_ordered_by_it() {
        let stamped = |cycle, ticks, hz| {
            let mut s = snap(cycle, 16);
            s.timestamp = Some(Timestamp {
                ticks,
                ticks_per_second: hz,
            });
            s.encode().unwrap()
        };
        // Cycles say b, a, c; the clock says c, a, b (a device reset restarted cycles).
        let (a, b, c) = (
            stamped(5, 2_000, 1_000),
            stamped(1, 3_000, 1_000),
            stamped(9, 1_000, 1_000),
        );
        let files = [
            ("a", a.as_slice()),
            ("b", b.as_slice()),
            ("c", c.as_slice()),
        ];
        let s = read_series(files, &Limits::default()).unwrap();
        let names: Vec<&str> = s.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["c", "a", "b"]);
        let p = point(&s.items[0].input);
        assert_eq!(p.timestamp.map(|t| t.ticks), Some(1_000));
        // Two clocks cannot be compared: by cycle then.
        let other = stamped(1, 3_000, 7);
        let files = [
            ("a", a.as_slice()),
            ("b", other.as_slice()),
            ("c", c.as_slice()),
        ];
        let s = read_series(files, &Limits::default()).unwrap();
        let names: Vec<&str> = s.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "c"]);
    }

    #[test]
    fn a_profile_among_the_files_keeps_the_order_given() {
        let s1 = snap(1, 64);
        let mut sym = crate::import::NoSymbols(&s1);
        let p = crate::import::to_profile(&s1, &mut sym, &mut |_, _| {});
        let pb = crate::profile::encode(&p);
        let late = snap(7, 16).encode().unwrap();
        let s = read_series(
            [("late", late.as_slice()), ("p", pb.as_slice())],
            &Limits::default(),
        )
        .unwrap();
        let names: Vec<&str> = s.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["late", "p"]);
        // The profile's in-use sums are the snapshot's sampled in-use values.
        assert_eq!(
            point(&s.items[1].input).in_use,
            point(&Input::Snapshot {
                snapshot: snap(1, 64),
                bad_frames: 0,
                frames: 0
            })
            .in_use
        );
    }

    #[test]
    fn exact_totals_and_drops_make_the_point() {
        let mut s = snap(3, 64);
        s.counters.set_heap(Some(sampler_core::HeapTotals {
            allocs: 10,
            frees: 4,
            in_use_bytes: 1000,
            peak_bytes: 2000,
        }));
        s.counters.samples = 50;
        s.counters.bucket_table_full = 2;
        let p = snapshot_point(&s);
        assert_eq!(
            p.in_use,
            Some(InUse {
                bytes: 1000,
                objects: 6,
                exact: true
            })
        );
        assert_eq!(p.drops, [("bucket_table_full", 2)]);
        assert_eq!(p.cycle, Some(3));
    }

    #[test]
    fn pick_counts_good_frames_from_either_end() {
        let mut cap = Vec::new();
        for c in [1, 2, 3] {
            cap.extend(framed(&snap(c, 16)));
        }
        cap.extend(b"junk\0");
        let s = capture_series("cap", &cap);
        let c = |i| cycle(&s.pick("cap", i).unwrap().input).unwrap();
        assert_eq!((c(0), c(2), c(-1), c(-3)), (1, 3, 3, 1));
        for bad in [3, -4, i64::MIN, i64::MAX] {
            let e = s.pick("cap", bad).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "no good frame @{bad}: cap has 3 good frame(s) (@0..@2, or @-3..@-1 from the end)"
                )
            );
        }
        assert_eq!(
            cycle(&capture_series("cap", &cap).take("cap", -2).unwrap().input),
            Some(2)
        );
    }

    /// The outline of `files` against their series read whole: the same points, bad
    /// frames and order, and each point's input decoded in full on demand is the item's.
    /// Ends `cap` with a corrupt frame between good ones and a torn one; returns the
    /// corrupt frame.
    fn end_badly(cap: &mut Vec<u8>) -> Vec<u8> {
        let mut bad = framed(&snap(7, 320));
        let mid = bad.len() / 2;
        bad[mid] ^= 0x55;
        cap.extend(&bad);
        cap.extend(framed(&snap(9, 48)));
        let torn = framed(&snap(8, 640));
        cap.extend(&torn[..torn.len() / 2]);
        bad
    }

    /// The point `i` as an outline decodes it is the point read whole.
    fn same_input(i: usize, got: &Input, want: &Input) {
        match (got, want) {
            (
                Input::Snapshot {
                    snapshot: a,
                    bad_frames: ab,
                    frames: af,
                },
                Input::Snapshot {
                    snapshot: b,
                    bad_frames: bb,
                    frames: bf,
                },
            ) => assert_eq!((a, ab, af), (b, bb, bf)),
            (Input::Profile(a), Input::Profile(b)) => assert_eq!(a, b),
            (a, b) => panic!("point {i}: {a:?} against {b:?}"),
        }
    }

    fn same_as_read_series(files: &[(&str, &[u8])]) {
        let s = read_series(files.iter().copied(), &Limits::default()).unwrap();
        let o = outline(files.iter().copied(), &Limits::default()).unwrap();
        let bytes: Vec<&[u8]> = files.iter().map(|f| f.1).collect();
        assert_eq!(
            o.rows,
            Points::from_series(read_series(files.iter().copied(), &Limits::default()).unwrap())
                .rows
        );
        assert_eq!((o.bad.clone(), o.frames), (s.bad.clone(), s.frames));
        for (i, item) in s.items.iter().enumerate() {
            same_input(i, &o.input(i, &bytes).unwrap(), &item.input);
        }
        let e = o.input(s.items.len(), &bytes).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("no point {n}: the series has {n}", n = s.items.len())
        );
    }

    #[test]
    fn an_outline_has_the_points_of_the_series_read_whole() {
        let mut cap = b"boot banner\r\n\0".to_vec();
        for c in [5, 6, 4] {
            let mut s = snap(c, 160 * c);
            s.mappings.push(sampler_core::decoded::Mapping {
                start: 0x1000,
                end: 0x9000,
                name: "fw".into(),
                ..Default::default()
            });
            s.objects = Some(vec![sampler_core::snapshot::LiveObject {
                addr: 0x2000_0000,
                stack_id: 1,
                size: 16,
            }]);
            cap.extend(framed(&s));
        }
        end_badly(&mut cap);
        same_as_read_series(&[("cap", &cap)]);
        // Plain files, ordered by cycle; a profile among them keeps the order given.
        let (a, b) = (snap(9, 16).encode().unwrap(), snap(2, 32).encode().unwrap());
        same_as_read_series(&[("a", &a), ("b", &b)]);
        let s1 = snap(1, 64);
        let pb = crate::profile::encode(&crate::import::to_profile(
            &s1,
            &mut crate::import::NoSymbols(&s1),
            &mut |_, _| {},
        ));
        same_as_read_series(&[("a", &a), ("p", &pb), ("cap", &cap)]);
        // No good point: read_series' error.
        let e = outline([("c", &b"junk\0"[..])], &Limits::default()).unwrap_err();
        let f = read_series([("c", &b"junk\0"[..])], &Limits::default()).unwrap_err();
        assert_eq!(e.to_string(), f.to_string());
    }

    /// A capture pushed a slice at a time into an outline ([`Outline::begin_capture`]
    /// and a [`snapshot::CaptureStream`], as the browser reads a capture too big to hold)
    /// has the points of the capture read whole; each point, decoded from a window
    /// holding only its frame ([`Outline::frame_span`]), is the point read whole.
    #[test]
    fn a_capture_pushed_in_slices_outlines_as_read_whole_and_points_decode_from_windows() {
        let mut cap = b"boot banner\r\n\0".to_vec();
        for c in [5, 6, 4] {
            cap.extend(framed(&snap(c, 160 * c)));
            cap.extend([0u8; 700]);
        }
        let bad = end_badly(&mut cap);
        let whole = outline([("cap", &cap[..])], &Limits::default()).unwrap();
        let series = read_series([("cap", &cap[..])], &Limits::default()).unwrap();
        for step in [1, 5, 512, 1000, 1 << 20] {
            let mut o = Outline::default();
            let mut c = o.begin_capture("cap", 0);
            let mut stream = snapshot::CaptureStream::new(1 << 20, snapshot::Detail::Totals);
            for chunk in cap.chunks(step) {
                stream.push(chunk, |f| o.add_frame(&mut c, f));
            }
            stream.finish(|f| o.add_frame(&mut c, f));
            o.end_capture(c);
            o.check_not_empty().unwrap();
            assert_eq!(o.rows, whole.rows, "{step} bytes at a time");
            assert_eq!((&o.bad, o.frames), (&whole.bad, whole.frames));
            for (i, item) in series.items.iter().enumerate() {
                let (file, offset, len) = o.frame_span(i).unwrap();
                assert_eq!(file, 0);
                let base = offset.saturating_sub(3);
                let window = &cap[base..offset + len];
                same_input(i, &o.input_in(i, window, base).unwrap(), &item.input);
            }
        }
        // Every frame bad: the error of the capture read whole.
        let mut o = Outline::default();
        let mut c = o.begin_capture("c", 0);
        let mut stream = snapshot::CaptureStream::new(1 << 20, snapshot::Detail::Totals);
        stream.push(&bad, |f| o.add_frame(&mut c, f));
        stream.finish(|f| o.add_frame(&mut c, f));
        o.end_capture(c);
        let e = outline([("c", &bad[..])], &Limits::default()).unwrap_err();
        assert_eq!(o.check_not_empty().unwrap_err().to_string(), e.to_string());
    }

    #[test]
    fn a_frame_decoded_again_elsewhere_says_where() {
        let cap = framed(&snap(1, 16));
        let good = snapshot::decode_frame(&cap, 0, cap.len() - 1).unwrap();
        assert_eq!(good.cycle, 1);
        let e = snapshot::decode_frame(&cap, 4, cap.len())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("the capture has {} bytes", cap.len())),
            "{e}"
        );
        let e = snapshot::decode_frame(&cap, 1, cap.len() - 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at byte"), "{e}");
    }
}
