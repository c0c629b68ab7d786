//! Reading dropped, picked or preloaded files: profiles are decoded while they stream
//! in (samples merged by stack as they are read), source files kept as text for the
//! source view.

use crate::perf::mark;
use crate::state::{Action, Slot};
use heapsnap_profile::analysis::{decode_compact, decode_compact_sized, CompactDecoder};
use heapsnap_profile::limits::Limits;
use heapsnap_profile::profile::{self, Profile, ProfileError};
use js_sys::Uint8Array;
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
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
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
    mark("file-selected");
    dispatch.emit(Action::Loading(
        files
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", "),
    ));
    wasm_bindgen_futures::spawn_local(async move {
        let mut sources = Vec::new();
        // (name, modified, size, decoded or error): profiles are decoded as they are
        // read, so no whole file is ever held in memory.
        let mut profiles = Vec::new();
        for f in files {
            let name = f.name();
            let read = if has_source_ext(&name) {
                read_blob(&f).await.map(|bytes| {
                    if is_source(&bytes) {
                        Err(String::from_utf8_lossy(&bytes).into_owned())
                    } else {
                        Ok(decode_compact(&bytes))
                    }
                })
            } else {
                decode_blob(&f).await.map(Ok)
            };
            let decoded = match read {
                Ok(Err(text)) => {
                    sources.push((name, text));
                    continue;
                }
                Ok(Ok(decoded)) => decoded,
                Err(ReadError::Profile(e)) => Err(e),
                Err(ReadError::Io(e)) => {
                    dispatch.emit(Action::Failed(format!(
                        "{name}: cannot read the file ({e})"
                    )));
                    return;
                }
                Err(ReadError::NoInflater) => {
                    dispatch.emit(Action::Failed(format!("{name}: {NO_INFLATER}")));
                    return;
                }
            };
            profiles.push((name, f.last_modified(), f.size() as usize, decoded));
        }
        if !sources.is_empty() {
            dispatch.emit(Action::Sources(sources));
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
                "{} profiles dropped at once: drop one, or two to compare (the older is the base)",
                profiles.len()
            )));
            return;
        }
        for ((name, _, len, decoded), slot) in profiles.into_iter().zip(slots) {
            deliver(name, decoded, len, slot, &dispatch);
        }
    });
}

/// Dispatches a decoded profile, or the error naming the file.
fn deliver(
    name: String,
    decoded: Result<Profile, ProfileError>,
    bytes: usize,
    slot: Slot,
    dispatch: &Callback<Action>,
) {
    match decoded {
        Ok(p) => {
            mark("decoded");
            dispatch.emit(Action::Loaded {
                slot,
                name,
                profile: std::rc::Rc::new(p),
                bytes,
            })
        }
        Err(e) => dispatch.emit(Action::Failed(format!(
            "{name} is not a usable pprof profile: {e}"
        ))),
    }
}

/// Fetches one profile, decodes it and dispatches it; `Err` when it cannot be fetched.
async fn fetch_into(url: String, slot: Slot, dispatch: &Callback<Action>) -> Result<(), String> {
    let blob = fetch(&url).await?;
    let decoded = match decode_blob(&blob).await {
        Ok(d) => d,
        Err(ReadError::Profile(e)) => Err(e),
        Err(ReadError::Io(e)) => return Err(format!("cannot read {url}: {e}")),
        Err(ReadError::NoInflater) => return Err(format!("{url}: {NO_INFLATER}")),
    };
    deliver(url, decoded, blob.size() as usize, slot, dispatch);
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
    /// It is gzip, and this browser has no `DecompressionStream` to inflate it.
    NoInflater,
}

/// What a user with a browser lacking `DecompressionStream` is told.
const NO_INFLATER: &str =
    "this browser cannot inflate gzip (no DecompressionStream); gunzip the profile and open that";

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
/// file costs no more memory than its first bad field. Only what the stream cannot
/// name (an invalid profile: the merge renumbers samples) is read again whole and
/// decoded by `decode_compact` for the message, after the stream has been scanned
/// within the limits.
async fn decode_blob(blob: &web_sys::Blob) -> Result<Result<Profile, ProfileError>, ReadError> {
    match stream_decode(blob).await? {
        Ok(p) => Ok(Ok(p)),
        Err(Some(e)) => Ok(Err(e)),
        Err(None) => {
            // Marked so that tests can tell a good or hostile file never takes this path.
            mark("whole-file-decode");
            let bytes = read_blob(blob).await?;
            Ok(decode_compact_sized(
                &bytes,
                &Limits::default(),
                blob.size() as u64,
            ))
        }
    }
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
        // Ended, or stopped by the decoder: it says why. Finishing (the tables
        // decoded, the merged samples built) starts a task of its own.
        Ok(_) => {
            let _ = JsFuture::from(yield_now()).await;
            Ok(decoder.finish())
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
    let io = |e| ReadError::Io(js_error(e));
    let head = blob.slice_with_i32_and_i32(0, 2).map_err(io)?;
    let head = JsFuture::from(head.array_buffer()).await.map_err(io)?;
    if !profile::is_gzip(&Uint8Array::new(&head).to_vec()) {
        return Ok((blob.stream(), false));
    }
    let inflated = inflate(blob).map_err(|_| ReadError::NoInflater)?;
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
    let mut since = js_sys::Date::now();
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
            if js_sys::Date::now() - since > YIELD_MS {
                let _ = JsFuture::from(yield_now()).await;
                since = js_sys::Date::now();
            }
            if !sink(slice) {
                let _ = reader.cancel();
                return Ok(false);
            }
        }
    }
}

/// The most bytes decoded between two looks at the clock (a millisecond or two).
const SLICE: usize = 64 << 10;

/// The longest the decoder works before it lets the page answer input (the issue's
/// target is 100 ms; a piece takes a few milliseconds).
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
"#)]
extern "C" {
    fn yield_now() -> js_sys::Promise;
}

// The inflated bytes of a gzipped Blob, as a stream fed by www/inflate-worker.js (the
// page's own origin, as the Content-Security-Policy requires), so the page decodes
// piece n while the worker inflates piece n+1 on another core. When the worker cannot
// run (it fails before its first byte: a page opened from file://, a blocked script),
// the browser's DecompressionStream inflates on this thread instead. Throws when this
// browser has no DecompressionStream; the stream errors if the gzip is corrupt.
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export function inflate(blob) {
  if (typeof DecompressionStream === 'undefined') throw new Error('no DecompressionStream');
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
      try { worker = new Worker('inflate-worker.js'); } catch (_) { here(); return; }
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
