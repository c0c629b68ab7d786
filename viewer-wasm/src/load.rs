//! Reading dropped, picked or preloaded files: profiles are decoded while they stream
//! in (samples merged by stack as they are read), source files kept as text for the
//! source view.

use crate::perf::mark;
use crate::state::{Action, Ready, Slot};
use heapsnap_profile::analysis::{CompactDecoder, Filter, Index};
use heapsnap_profile::limits::Limits;
use heapsnap_profile::profile::{self, Profile, ProfileError};
use js_sys::Uint8Array;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use yew::Callback;

/// File name endings treated as source text rather than profiles.
const SOURCE_EXT: &[&str] = &[
    "go", "rs", "c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx", "s", "S", "py", "java", "kt",
    "js", "ts", "zig", "swift", "m", "mm", "cs", "rb",
];

/// The files of a file input or a drop.
pub fn files_of(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    // A loop, not `filter_map(..).collect()`: 0.3 KiB less of the bundle.
    let mut files = Vec::new();
    if let Some(list) = list {
        for i in 0..list.length() {
            files.extend(list.get(i));
        }
    }
    files
}

/// Named like a source file (then read whole, and kept as text if it is text).
fn has_source_ext(name: &str) -> bool {
    let ext = name.rsplit('.').next().unwrap_or("");
    name.contains('.') && SOURCE_EXT.contains(&ext)
}

fn is_source(bytes: &[u8]) -> bool {
    !profile::is_gzip(bytes) && std::str::from_utf8(bytes).is_ok()
}

/// Reads `files` (from an `<input type=file>` or a drop) and dispatches the results.
/// Profiles go to `slot`; when two profiles come at once into the main slot, the
/// older file (by modification time) becomes the base.
pub fn read_files(files: Vec<web_sys::File>, slot: Slot, dispatch: Callback<Action>) {
    if files.is_empty() {
        return;
    }
    // Three profiles or more at once (beside ELFs; sources aside): one series, read by
    // the importer and charted (www/series.js), which opens its last point through the
    // file input; fewer are read here as before (one shown, or two compared).
    let many = js_sys::Array::new();
    for f in &files {
        if !has_source_ext(&f.name()) {
            many.push(f);
        }
    }
    let series = slot == Slot::Main && read_series(&many);
    mark("file-selected");
    // A series says how it is going in its own place (`#import-progress`, then the
    // chart or its error): a "Loading…" here would outlive a series that failed.
    if !series {
        let mut names = String::new();
        for (i, f) in files.iter().enumerate() {
            if i > 0 {
                names.push_str(", ");
            }
            names.push_str(&f.name());
        }
        dispatch.emit(Action::Loading(names));
    }
    wasm_bindgen_futures::spawn_local(async move {
        let mut sources = Vec::new();
        // (name, modified, size, decoded or error): profiles are decoded as they are
        // read, so no whole file is ever held in memory.
        let mut profiles = Vec::new();
        // ELFs among the files: the importer symbolizes snapshots with them.
        let mut elves = 0;
        for f in &files {
            let name = f.name();
            if has_source_ext(&name) {
                match read_blob(f).await {
                    Ok(bytes) if is_source(&bytes) => {
                        sources.push((name, String::from_utf8_lossy(&bytes).into_owned()));
                        continue;
                    }
                    // Named like source, and not text: read as a profile below.
                    _ => {}
                }
            }
            if series {
                continue;
            }
            let decoded = match decode_blob(f, &name, &files).await {
                Read::Elf => {
                    elves += 1;
                    continue;
                }
                Read::Profile(p) => Ok(p),
                Read::Failed(e) => Err(e),
            };
            profiles.push((name, f.last_modified(), f.size() as usize, decoded));
        }
        if !sources.is_empty() {
            dispatch.emit(Action::Sources(sources));
        }
        if profiles.is_empty() && elves > 0 {
            return dispatch.emit(Action::Failed(ELF_ALONE.into()));
        }
        let mut slots = vec![slot];
        if slot == Slot::Main && profiles.len() == 2 {
            // Older first (a swap, not a sort: a sort instantiation is kilobytes of wasm).
            if profiles[0].1 > profiles[1].1 {
                profiles.swap(0, 1);
            }
            slots = vec![Slot::Base, Slot::Main];
        } else if profiles.len() > 1 {
            dispatch.emit(Action::Failed(format!(
                "{} profiles: open one, or two to diff",
                profiles.len()
            )));
            return;
        }
        // One profile shown: its index and flame graph are built here, in slices (two
        // are shown as their diff, indexed when combined).
        let prepare = slots == [Slot::Main];
        for ((name, _, len, decoded), slot) in profiles.into_iter().zip(slots) {
            deliver(name, decoded, len, slot, prepare, &dispatch);
        }
    });
}

/// What an ELF opened without a snapshot is told.
const ELF_ALONE: &str = "an ELF alone shows nothing: open it with the snapshot it symbolizes";

/// What one file turned out to be.
// One per file, moved straight on: boxing the profile would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Read {
    /// A profile (pprof, or another format through the importer).
    Profile(Profile),
    /// An ELF, for the importer to symbolize the snapshots beside it with.
    Elf,
    /// Not usable: the whole message to show.
    Failed(String),
}

/// The first `n` bytes of a file.
async fn head(blob: &web_sys::Blob, n: i32) -> Result<Vec<u8>, wasm_bindgen::JsValue> {
    let head = blob.slice_with_i32_and_i32(0, n)?;
    let head = JsFuture::from(head.array_buffer()).await?;
    Ok(Uint8Array::new(&head).to_vec())
}

/// Dispatches a decoded profile, or the error naming the file; with `prepare`, its
/// index and first flame tree built first (see [`prepare`]).
fn deliver(
    name: String,
    decoded: Result<Profile, String>,
    bytes: usize,
    slot: Slot,
    prepare: bool,
    dispatch: &Callback<Action>,
) {
    match decoded {
        Ok(mut p) => {
            // As pprof reads every profile: its drop_frames/keep_frames applied (the
            // allocator's own frames cut, so the allocating function is the leaf).
            // Patterns that do not compile drop nothing, as in pprof; the page says so.
            if let Err(e) = p.remove_uninteresting(&crate::regex::compile) {
                p.comment.push(p.string_table.len() as i64);
                p.string_table.push(format!(
                    "warning: {e}; no frames dropped (as go tool pprof)"
                ));
            }
            // Every name, type, unit and comment shown as the CLI prints it: control and
            // bidirectional characters escaped, so no name reorders or splits a row.
            for s in &mut p.string_table {
                if let std::borrow::Cow::Owned(shown) = heapsnap_profile::text::printable(s) {
                    *s = shown;
                }
            }
            mark("decoded");
            let profile = Rc::new(p);
            let dispatch = dispatch.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let ready = match prepare {
                    true => Some(self::prepare(profile.clone()).await),
                    false => None,
                };
                let index = ready.as_ref().map(|r| r.index.clone());
                dispatch.emit(Action::Loaded {
                    slot,
                    name,
                    profile,
                    bytes,
                    ready,
                });
                if let Some(ix) = index {
                    sort_stacks(ix).await;
                }
            });
        }
        Err(e) => dispatch.emit(Action::Failed(e)),
    }
}

/// The index and the flame tree (default sample type, unfiltered) of a profile just
/// decoded, built a slice at a time, the page getting a turn every [`YIELD_MS`]: on a
/// large profile each is hundreds of milliseconds of work, which in one task would
/// leave the page deaf to input that long (issue 12).
async fn prepare(profile: Rc<Profile>) -> Ready {
    breathe().await;
    let mut b = Index::build_shared(profile);
    in_slices(&mut || b.step(STEP)).await;
    let index = Rc::new(b.finish());
    mark("indexed");
    let sample_index = index.profile.default_sample_index();
    breathe().await;
    let mut f = index.flame_build(sample_index, &Filter::none());
    in_slices(&mut || f.step(&index, STEP)).await;
    let flame = Rc::new(f.finish(&index));
    mark("flame-built");
    // The first paint (the page's render and the flame graph drawn) in a task of its own.
    turn().await;
    Ready {
        index,
        sample_index,
        flame,
    }
}

/// Once the first flame graph is on screen: every sample of its index sorted by stack
/// in the background, in slices, so that the trees after it (another sample type, a
/// filter) are built without sorting: on a Go heap profile of half a million distinct
/// deep stacks a switch to `alloc_space` took 0.6 s, most of it that sort. Given up
/// when the page lets go of the index (another file dropped) before it is done.
async fn sort_stacks(ix: Rc<Index<'static>>) {
    let _ = JsFuture::from(after_paint()).await;
    turned();
    let mut sort = ix.sort_stacks();
    let held = |ix: &Rc<Index<'static>>| Rc::strong_count(ix) > 1;
    in_slices(&mut || !held(&ix) || sort.step(&ix, STEP)).await;
    if held(&ix) {
        sort.finish(&ix);
        mark("stacks-sorted");
    }
}

/// Samples (or stacks) indexed, read, sorted or added to the flame tree between two
/// looks at the clock (a millisecond or so).
const STEP: usize = 1024;

/// Runs `step` until it says it is done, the page getting a turn every [`YIELD_MS`]
/// (a small profile is shown without giving the page a turn, or a frame, between its
/// stages).
async fn in_slices(step: &mut dyn FnMut() -> bool) {
    loop {
        breathe().await;
        if step() {
            return;
        }
    }
}

/// When the page last had a turn (`f64` bits of `Date.now()`): one clock for every
/// stage of a load, so that work carried from one stage into the next counts once.
/// Each stage timing itself from its own start made tasks of 80–110 ms where the
/// stages met (decoded, then indexed, then the flame tree begun), and a timer 206 ms
/// late on a CI run.
static LAST_TURN: AtomicU64 = AtomicU64::new(0);

/// Notes that the page just had a turn.
fn turned() {
    LAST_TURN.store(js_sys::Date::now().to_bits(), Relaxed);
}

/// Lets the page answer input when the work since its last turn took longer than
/// [`YIELD_MS`].
async fn breathe() {
    let since = js_sys::Date::now() - f64::from_bits(LAST_TURN.load(Relaxed));
    // (Negative when the wall clock was set back: a turn, and the clock starts again.)
    if !(0.0..=YIELD_MS).contains(&since) {
        turn().await;
    }
}

/// Lets the page answer input now (a turn of its event loop), and notes it.
async fn turn() {
    let _ = JsFuture::from(yield_now()).await;
    turned();
}

/// Fetches one profile, decodes it and dispatches it; `Err` when it cannot be fetched.
async fn fetch_into(url: String, slot: Slot, dispatch: &Callback<Action>) -> Result<(), String> {
    let blob = fetch(&url).await?;
    let decoded = match decode_blob(&blob, &url, &[]).await {
        Read::Profile(p) => Ok(p),
        Read::Failed(e) => Err(e),
        Read::Elf => Err(format!("{url}: {ELF_ALONE}")),
    };
    deliver(
        url,
        decoded,
        blob.size() as usize,
        slot,
        slot == Slot::Main,
        dispatch,
    );
    Ok(())
}

/// Fetches the profiles named by `?profile=URL` / `?base=URL` (same origin only: the
/// Content-Security-Policy forbids anything else).
pub fn preload(dispatch: Callback<Action>) {
    let Some(url) = crate::hash::preload_url("profile") else {
        return;
    };
    let base = crate::hash::preload_url("base");
    mark("file-selected");
    dispatch.emit(Action::Loading(url.clone()));
    wasm_bindgen_futures::spawn_local(async move {
        if let Some(b) = base {
            if let Err(e) = fetch_into(b, Slot::Base, &dispatch).await {
                return dispatch.emit(Action::Failed(e));
            }
        }
        if let Err(e) = fetch_into(url, Slot::Main, &dispatch).await {
            dispatch.emit(Action::Failed(e));
        }
    });
}

/// Why a file's bytes could not be had.
enum ReadError {
    /// The file or response could not be read at all.
    Io(String),
    /// It is gzip, and does not inflate (corrupt or too large).
    Profile(ProfileError),
}

/// The message of a JS exception (`Error.message`, or the thrown string), without
/// the `Debug` formatting of `JsValue` (which drags a deep formatter into the bundle).
fn js_error(e: wasm_bindgen::JsValue) -> String {
    match e.dyn_ref::<js_sys::Error>() {
        Some(err) => err.message().into(),
        None => e.as_string().unwrap_or_else(|| "unknown error".to_owned()),
    }
}

/// Decodes a profile while it is read, piece by piece as the browser delivers it
/// (gzip inflated by the browser's own `DecompressionStream`, in a worker when it can
/// be: there is no inflater in the wasm bundle): no whole copy of the file is ever in
/// wasm memory, and the page keeps answering input between pieces. A bad file is
/// refused where the streaming decoder finds it wrong (malformed, truncated, over a
/// limit, inflating past the cap), with the whole-file decoder's message, so a hostile
/// file costs no more memory than its first bad field.
///
/// The importer module (`www/import-worker.js`, loaded only then) reads what the
/// stream refuses for its content: another format (a snapshot or capture, symbolized
/// with the ELFs among the files `beside` it; legacy or folded text), handed back as pprof and decoded here, and
/// what the stream cannot name (an invalid profile: the merge renumbers samples),
/// which the whole-file decoder there reads for the message, after the stream has
/// scanned it within the limits. The error is the whole message to show.
async fn decode_blob(blob: &web_sys::Blob, name: &str, beside: &[web_sys::File]) -> Read {
    let pprof_error = match stream_decode(blob).await {
        Ok(Ok(p)) => return Read::Profile(p),
        Err(ReadError::Io(e)) => return Read::Failed(format!("{name}: {e}")),
        Err(ReadError::Profile(e)) => return Read::Failed(not_usable(name, &e)),
        // Not the content: any reader would fail the same way.
        Ok(Err(Some(
            e @ (ProfileError::Empty | ProfileError::Gzip(_) | ProfileError::TooLarge { .. }),
        ))) => return Read::Failed(not_usable(name, &e)),
        Ok(Err(Some(e))) => Some(e),
        // Marked so that tests can tell a good or hostile file never takes this path.
        Ok(Err(None)) => {
            mark("whole-file-decode");
            None
        }
    };
    mark("importer");
    let list: js_sys::Array = beside.iter().collect();
    let answer = import_file(blob, name, &list, pprof_error.is_none());
    let answer = match (JsFuture::from(answer).await, pprof_error) {
        // The importer sees pprof: the decoder's message stands.
        (Ok(v), Some(e)) if v.is_null() => return Read::Failed(not_usable(name, &e)),
        // An ELF: it serves the snapshots beside it.
        (Ok(v), _) if v.is_undefined() => return Read::Elf,
        (Ok(v), _) => Uint8Array::new(&v).to_vec(),
        (Err(why), None) => return Read::Failed(not_usable(name, &js_error(why))),
        (Err(why), Some(_)) => return Read::Failed(format!("{name}: {}", js_error(why))),
    };
    // The importer's own pprof, decoded as a stream would be, within the limits of
    // its size.
    let mut d = CompactDecoder::with_limits(&Limits::default(), answer.len() as u64);
    d.feed(&answer);
    match d.finish() {
        Ok(p) => Read::Profile(p),
        Err(e) => Read::Failed(not_usable(
            name,
            &e.map_or_else(|| "invalid".into(), |e| e.to_string()),
        )),
    }
}

/// The message for a file the pprof decoder refused.
fn not_usable(name: &str, e: &dyn std::fmt::Display) -> String {
    format!("{name} is not a usable pprof profile: {e}")
}

/// The streamed decode: `Err(None)` when only the whole-file decoder can say what is
/// wrong (see [`decode_blob`]).
async fn stream_decode(
    blob: &web_sys::Blob,
) -> Result<Result<Profile, Option<ProfileError>>, ReadError> {
    let limits = Limits::default();
    // No `input-size` check: the file is streamed, never held whole, and what it
    // decodes to is bounded by the entry budget of its size.
    let size = blob.size() as u64;
    let (stream, gzipped) = open(blob).await?;
    // Counted against the limits for the file's own size, as the CLI counts.
    let mut decoder = CompactDecoder::with_limits(&limits, size);
    if gzipped {
        decoder = decoder.inflated();
    }
    let cap = limits.inflated_cap();
    let mut total = 0usize;
    let ended = pump(stream, &mut |piece| {
        total += piece.len();
        (!gzipped || total <= cap) && decoder.feed(piece)
    })
    .await;
    match ended {
        // The gzip is corrupt or truncated (the inflater's words), or the read failed.
        Err(e) if gzipped => {
            let mut why = js_error(e);
            if why.contains("Junk found after end") {
                // Chromium's words for a second gzip member (`cat a.gz b.gz`), which
                // pprof reads and `DecompressionStream` does not.
                why.push_str(" (several gzip members? browsers read one: gunzip it)");
            }
            Ok(Err(Some(ProfileError::Gzip(why))))
        }
        Err(e) => Err(ReadError::Io(js_error(e))),
        Ok(_) if gzipped && total > cap => Ok(Err(Some(ProfileError::TooLarge { limit: cap }))),
        Ok(_) if total == 0 => Ok(Err(Some(ProfileError::Empty))),
        // Ended, or stopped by the decoder: it says why. Finishing: the tables
        // decoded, then the merged samples built in slices.
        Ok(_) => {
            breathe().await;
            let mut f = match decoder.finishing() {
                Ok(f) => f,
                Err(e) => return Ok(Err(e)),
            };
            in_slices(&mut || f.step(STEP)).await;
            Ok(f.finish())
        }
    }
}

/// The bytes of a file or response, inflated if gzipped (by the browser: there is no
/// inflater in the wasm bundle), capped like the native decoder.
async fn read_blob(blob: &web_sys::Blob) -> Result<Vec<u8>, ReadError> {
    let (stream, gzipped) = open(blob).await?;
    let mut out = Vec::new();
    let ended = pump(stream, &mut |piece| {
        out.extend_from_slice(piece);
        out.len() <= profile::DEFAULT_MAX_INFLATED
    })
    .await
    .map_err(|e| match gzipped {
        true => ReadError::Profile(ProfileError::Gzip(js_error(e))),
        false => ReadError::Io(js_error(e)),
    })?;
    if !ended {
        return Err(ReadError::Profile(ProfileError::TooLarge {
            limit: profile::DEFAULT_MAX_INFLATED,
        }));
    }
    Ok(out)
}

/// The file's bytes as a stream, and whether it is gzip (then the stream is the
/// inflated bytes, from the inflate worker, or from this thread when no worker runs).
async fn open(blob: &web_sys::Blob) -> Result<(web_sys::ReadableStream, bool), ReadError> {
    let head = head(blob, 2)
        .await
        .map_err(|e| ReadError::Io(js_error(e)))?;
    if !profile::is_gzip(&head) {
        return Ok((blob.stream(), false));
    }
    let inflated = inflate(blob).map_err(|e| ReadError::Io(js_error(e)))?;
    Ok((inflated, true))
}

/// Hands the stream's pieces to `sink` as they arrive: `Ok(true)` at its end,
/// `Ok(false)` (and the stream cancelled) as soon as `sink` says stop.
async fn pump(
    stream: web_sys::ReadableStream,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<bool, wasm_bindgen::JsValue> {
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().dyn_into()?;
    let mut piece = Vec::new();
    loop {
        let chunk = JsFuture::from(reader.read()).await?;
        if js_sys::Reflect::get(&chunk, &"done".into())?.is_truthy() {
            return Ok(true);
        }
        let value: Uint8Array = js_sys::Reflect::get(&chunk, &"value".into())?.dyn_into()?;
        piece.resize(value.length() as usize, 0);
        value.copy_to(&mut piece);
        // Fed in slices: pieces already queued resolve `read()` at once (a microtask,
        // no input served in between), and one piece may be megabytes, so the page
        // gets a turn every few milliseconds of decoding.
        for slice in piece.chunks(SLICE) {
            breathe().await;
            if !sink(slice) {
                let _ = reader.cancel();
                return Ok(false);
            }
        }
    }
}

/// The most bytes decoded between two looks at the clock (a millisecond or two).
const SLICE: usize = 64 << 10;

/// The longest a load works, across its stages (decoding, index, flame tree, the
/// background sort), before it lets the page answer input (the issue's target is 100
/// ms; a piece takes a few milliseconds).
const YIELD_MS: f64 = 25.0;

// A macrotask turn of the event loop (input, rendering and other tasks run first):
// a message to itself, which unlike `setTimeout(0)` is not clamped to 4 ms.
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export function yield_now() {
  return new Promise((resolve) => {
    const c = new MessageChannel();
    c.port1.onmessage = () => resolve();
    c.port2.postMessage(null);
  });
}
export function after_paint() {
  return new Promise((resolve) => requestAnimationFrame(() => yield_now().then(resolve)));
}
"#)]
extern "C" {
    fn yield_now() -> js_sys::Promise;
    /// The first turn after the next frame is painted.
    fn after_paint() -> js_sys::Promise;
}

// The inflated bytes of a gzipped Blob, as a stream fed by www/inflate-worker.js (the
// page's own origin, as the Content-Security-Policy requires), so the page decodes
// piece n while the worker inflates piece n+1 on another core (a small file is inflated
// on this thread: the worker's start would cost more). When the worker cannot
// run (it fails before its first byte: a page opened from file://, a blocked script),
// the browser's DecompressionStream inflates on this thread instead. Throws when this
// browser has no DecompressionStream; the stream errors if the gzip is corrupt.
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
// Below this many gzipped bytes (a few MB inflated, a few ms of inflating) no worker.
const SMALL_GZIP = 256 << 10;
export function inflate(blob) {
  if (typeof DecompressionStream === 'undefined') {
    throw new Error('this browser cannot inflate gzip (no DecompressionStream); gunzip the profile and open that');
  }
  let worker = null, started = false, cancelled = false;
  return new ReadableStream({
    start(controller) {
      const here = async () => {
        try {
          const r = blob.stream().pipeThrough(new DecompressionStream('gzip')).getReader();
          for (;;) {
            const { done, value } = await r.read();
            if (cancelled) { r.cancel(); return; }
            if (done) break;
            controller.enqueue(value);
          }
          controller.close();
        } catch (err) { controller.error(err); }
      };
      // A small file is inflated here: starting a worker (its script fetched, a
      // thread started) takes longer than inflating it, and there is no piece n+1
      // worth overlapping with.
      if (blob.size < SMALL_GZIP) { here(); return; }
      try { worker = new Worker('inflate-worker.js'); } catch (_) { here(); return; }
      // For the tests: a big file takes the worker.
      performance.mark('heapsnap:inflate-worker');
      worker.onmessage = (e) => {
        const m = e.data;
        started = true;
        if (m.chunk) { controller.enqueue(m.chunk); return; }
        if (m.done) controller.close(); else controller.error(new Error(m.error));
        worker.terminate();
      };
      worker.onerror = (e) => {
        worker.terminate();
        if (started) controller.error(new Error(e.message || 'the inflate worker failed'));
        else here();
      };
      worker.postMessage(blob);
    },
    cancel() { cancelled = true; if (worker) worker.terminate(); },
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn inflate(blob: &web_sys::Blob) -> Result<web_sys::ReadableStream, wasm_bindgen::JsValue>;
}

// Reads a file through the importer module in a worker of its own (see
// www/import-worker.js), ended when it answers: resolves to the pprof bytes, or to
// null when the importer sees a pprof file (the decoder's message stands) unless
// `whole` asks for its whole-file decode; rejects with the importer's message. Its
// progress messages are shown in `#import-progress`; a capture read as a series
// resolves to its last frame and hands the worker to the chart (www/series.js).
// `many`: the files `beside` (`input` their first) read as one series, whose chart
// opens its last point through the page's file input (resolves to true), or null when
// fewer than three of them are not ELFs.
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
// `many` (the files opened that are not sources, read as usual) read as one series when
// three of them or more are not ELFs: true when it takes them. Else (fewer: known only
// once read, so after true was said) they are opened again, to be read one by one; an
// error is shown where the chart would be.
let oneByOne = false;
export function read_series(many) {
  if (many.length < 3 || oneByOne) { oneByOne = false; return false; }
  import_file(many[0], '', many, false, true).then((took) => {
    if (took) return;
    oneByOne = true;
    const input = document.querySelector('[data-testid=file-input]');
    const dt = new DataTransfer();
    for (const f of many) dt.items.add(f);
    input.files = dt.files;
    input.dispatchEvent(new Event('change', { bubbles: true }));
  }, (e) => import(new URL('series.js', document.baseURI).href).then((s) => s.fail(e.message)));
  return true;
}

export function import_file(input, name, beside, whole, many) {
  return new Promise((resolve, reject) => {
    let worker;
    try { worker = new Worker('import-worker.js', { type: 'module' }); }
    catch (e) { reject(new Error(`the importer cannot start (${e.message})`)); return; }
    const shown = document.getElementById('import-progress');
    const done = () => { if (shown) shown.hidden = true; };
    let series = null;
    const answer = (m) => {
      if (m.progress !== undefined) {
        if (shown) { shown.textContent = m.progress; shown.hidden = false; }
        return;
      }
      if (m.series) {
        // A capture read as a series: the chart first; the worker stays with it and
        // hands back what is not the chart's (the last frame, an error).
        series = import(new URL('series.js', document.baseURI).href);
        series.then((s) => s.open(worker, m.series, m.series.name || name, answer)).catch(() => {});
        return;
      }
      done();
      // A series' first conversion, for the benchmark.
      if (m.first !== undefined) performance.measure('heapsnap:series-first', { start: 0, duration: m.first });
      if (many && series && m.profile !== undefined) {
        series.then((s) => s.openLast(m.profile)).catch(() => {});
        resolve(true);
        return;
      }
      if (!series || m.error !== undefined) worker.terminate();
      if (series && m.error !== undefined) series.then((s) => s.close()).catch(() => {});
      if (m.error !== undefined) reject(new Error(m.error));
      else resolve(m.pprof ? null : m.profile); // undefined: an ELF
    };
    worker.onmessage = (e) => answer(e.data);
    worker.onerror = (e) => {
      worker.terminate();
      done();
      reject(new Error(`the importer failed (${e.message || 'it did not load'}); is www/pkg/viewer_import.js built?`));
    };
    worker.postMessage({ input, name, beside, whole, many });
  });
}
"#)]
extern "C" {
    fn import_file(
        input: &web_sys::Blob,
        name: &str,
        beside: &js_sys::Array,
        whole: bool,
    ) -> js_sys::Promise;

    fn read_series(many: &js_sys::Array) -> bool;
}

async fn fetch(url: &str) -> Result<web_sys::Blob, String> {
    let err = |what: &str, e| format!("cannot {what} {url}: {}", js_error(e));
    let w = web_sys::window().ok_or("no window")?;
    let resp = JsFuture::from(w.fetch_with_str(url))
        .await
        .map_err(|e| err("fetch", e))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|e| err("fetch", e))?;
    if !resp.ok() {
        return Err(format!("cannot fetch {url}: HTTP {}", resp.status()));
    }
    let blob = resp.blob().map_err(|e| err("read", e))?;
    JsFuture::from(blob)
        .await
        .map_err(|e| err("read", e))?
        .dyn_into()
        .map_err(|e| err("read", e))
}
