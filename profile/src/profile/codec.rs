//! Reading and writing pprof bytes: gzip sniffing with a size cap, prost, validation.

use super::scan::Scan;
use super::{Profile, ProfileError};
use crate::limits::{Budget, Limits};

/// Default cap on the inflated size of a profile (256 MiB): far beyond any heap
/// profile, small enough that a gzip bomb is an error and not an out-of-memory kill.
pub const DEFAULT_MAX_INFLATED: usize = 256 << 20;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Decodes a pprof profile, gzipped (as pprof writes it) or raw protobuf, and
/// validates it (see [`Profile::check_valid`]), so every later step can index ids and
/// strings without checking again. Within the default [`Limits`].
pub fn decode(bytes: &[u8]) -> Result<Profile, ProfileError> {
    decode_limited(bytes, &Limits::default())
}

/// [`decode`] with an explicit cap on the inflated size (other limits the defaults).
pub fn decode_with_limit(bytes: &[u8], max_inflated: usize) -> Result<Profile, ProfileError> {
    decode_limited(
        bytes,
        &Limits {
            inflated_size: max_inflated as u64,
            ..Limits::default()
        },
    )
}

/// [`decode`] within `limits`: the bytes are scanned (and, gzipped, inflated) field
/// by field before prost sees them, so a malformed file is reported with its byte
/// offset and field path, and one that would decode into more than the limits allow is
/// refused before anything is built from it (see [`crate::limits`]).
pub fn decode_limited(bytes: &[u8], limits: &Limits) -> Result<Profile, ProfileError> {
    let p = super::read::read_whole(&scanned(bytes, limits)?)?;
    p.check_valid()?;
    Ok(p)
}

/// `raw` (whole top-level fields, already scanned) with every string-table entry that
/// is not UTF-8 decoded lossily, each invalid sequence one U+FFFD (Rust's and the
/// Unicode standard's maximal-subpart rule), as Go's strings show on a terminal: pprof
/// takes string bytes as they are, so such a file is read, not refused. Borrowed when
/// every string is UTF-8 (prost then decodes the bytes as they are). A string grows by
/// at most 2 bytes per invalid byte, so the result stays within 3× of what the scan
/// admitted.
pub(crate) fn lossy_strings(raw: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const STRING_TABLE: u64 = 6;
    // Built only from the first string that needs it: everything before, verbatim.
    let mut out: Option<Vec<u8>> = None;
    let mut pos = 0;
    while let Some((tag, wire, whole, body)) = pprof_scan::field(raw, &mut pos) {
        // `from_utf8_lossy` borrows when the bytes are UTF-8: one out-of-line check
        // (`from_utf8` would inline its validation here, in the viewer too).
        let lossy = match (tag, wire) {
            (STRING_TABLE, 2) => String::from_utf8_lossy(body),
            _ => std::borrow::Cow::Borrowed(""),
        };
        if let std::borrow::Cow::Owned(s) = lossy {
            let o = out.get_or_insert_with(|| raw[..pos - whole.len()].to_vec());
            o.push((STRING_TABLE << 3 | 2) as u8);
            let mut n = s.len() as u64;
            while n >= 0x80 {
                o.push(n as u8 | 0x80);
                n >>= 7;
            }
            o.push(n as u8);
            o.extend_from_slice(s.as_bytes());
        } else if let Some(o) = &mut out {
            o.extend_from_slice(whole);
        }
    }
    match out {
        // A scanned buffer is whole fields; anything left (never, after the scan) kept.
        Some(mut o) => {
            o.extend_from_slice(&raw[pos..]);
            std::borrow::Cow::Owned(o)
        }
        None => std::borrow::Cow::Borrowed(raw),
    }
}

/// The raw protobuf of `bytes` (inflated when gzipped), scanned within `limits`
/// (see `scan`): what prost may then decode without surprises.
pub(crate) fn scanned<'a>(
    bytes: &'a [u8],
    limits: &Limits,
) -> Result<std::borrow::Cow<'a, [u8]>, ProfileError> {
    scanned_as(bytes, limits, bytes.len() as u64)
}

/// [`scanned`] with the entry budget of an input of `input_len` bytes (the file as
/// given, when `bytes` were inflated by someone else).
pub(crate) fn scanned_as<'a>(
    bytes: &'a [u8],
    limits: &Limits,
    input_len: u64,
) -> Result<std::borrow::Cow<'a, [u8]>, ProfileError> {
    if bytes.is_empty() {
        return Err(ProfileError::Empty);
    }
    let budget = Budget::new(limits, input_len);
    if !is_gzip(bytes) {
        Scan::new(budget, false).finish(bytes)?;
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let mut scan = Scan::new(budget, true);
    let out = inflate_with(bytes, limits.inflated_cap(), &mut |raw| scan.feed(raw))?;
    scan.finish(&out)?;
    Ok(std::borrow::Cow::Owned(out))
}

/// Does `bytes` start with the gzip magic?
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// Inflates a (possibly multi-member) gzip stream, refusing to produce more than
/// `limit` bytes. Without the `gzip` feature (the browser viewer, which inflates with
/// the browser's `DecompressionStream`) every call is a [`ProfileError::GzipUnsupported`].
pub fn inflate(bytes: &[u8], limit: usize) -> Result<Vec<u8>, ProfileError> {
    inflate_with(bytes, limit, &mut |_| Ok(()))
}

/// [`inflate`], showing `progress` everything inflated so far after each piece, so a
/// scan can stop an amplifying stream long before the cap.
fn inflate_with(
    bytes: &[u8],
    limit: usize,
    progress: &mut dyn FnMut(&[u8]) -> Result<(), ProfileError>,
) -> Result<Vec<u8>, ProfileError> {
    let mut out = Vec::new();
    let mut stopped = None;
    inflate_each(bytes, limit, &mut |piece| {
        out.extend_from_slice(piece);
        stopped = progress(&out).err();
        stopped.is_none()
    })?;
    stopped.map_or(Ok(out), Err)
}

/// The one inflate loop, with [`inflate`]'s cap and errors ([`inflate`] keeps what it
/// hands out), handing each piece to `each` and keeping none: a streaming decoder's
/// input, which then never exists whole (142 MB of a 30 MB Go heap profile).
/// `Ok(false)` when `each` stopped it.
#[cfg(feature = "gzip")]
pub(crate) fn inflate_each(
    bytes: &[u8],
    limit: usize,
    each: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<bool, ProfileError> {
    use std::io::Read;
    const PIECE: usize = 1 << 20;
    let mut piece = Vec::with_capacity(PIECE);
    let mut total = 0usize;
    let mut dec = flate2::read::MultiGzDecoder::new(bytes).take(limit as u64 + 1);
    loop {
        piece.clear();
        let n = (&mut dec)
            .take(PIECE as u64)
            .read_to_end(&mut piece)
            .map_err(|e| ProfileError::Gzip(e.to_string()))?;
        total += n;
        if total > limit {
            return Err(ProfileError::TooLarge { limit });
        }
        if n == 0 {
            return Ok(true);
        }
        if !each(&piece) {
            return Ok(false);
        }
    }
}

/// [`inflate_each`] on a thread of its own and `each` on this one, each piece handed
/// over as it is made, so that inflating (a tenth of `heapsnap top` on a 30 MB Go heap
/// profile) overlaps decoding on a second core. Its answer is `inflate_each`'s: when
/// `each` stops, that stands, as it would have stopped the inflating there (a piece
/// the thread inflated ahead, maybe into a corrupt stretch, is not reported). Where no
/// thread can start, the same loop runs here.
#[cfg(feature = "gzip")]
pub(crate) fn inflate_beside(
    bytes: &[u8],
    limit: usize,
    each: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<bool, ProfileError> {
    std::thread::scope(|s| {
        // Two pieces in flight at most (1 MiB each): the inflater waits for the decoder.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        let inflater = std::thread::Builder::new()
            .name("heapsnap inflate".into())
            .spawn_scoped(s, move || {
                inflate_each(bytes, limit, &mut |piece| tx.send(piece.to_vec()).is_ok())
            });
        let Ok(inflater) = inflater else {
            return inflate_each(bytes, limit, each);
        };
        // Ends when the inflater does (its sender dropped), or at `each`'s word.
        let stopped = rx.iter().any(|piece| !each(&piece));
        // A stopped receiver fails the inflater's next send: it stops there.
        drop(rx);
        let inflated = inflater
            .join()
            .unwrap_or_else(|_| Err(ProfileError::Gzip("the inflating thread failed".into())));
        if stopped {
            Ok(false)
        } else {
            inflated
        }
    })
}

#[cfg(not(feature = "gzip"))]
pub(crate) fn inflate_each(
    _bytes: &[u8],
    _limit: usize,
    _each: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<bool, ProfileError> {
    Err(ProfileError::GzipUnsupported)
}

/// Encodes a profile as gzipped protobuf, as pprof writes it. Gzip level 2 of zlib-rs:
/// `heapsnap convert` of the 30 MB Go heap profile writes 21.0 MB at level 2, 28.1 MB
/// at zlib-rs's level 1 (its quick strategy) in about the same time, and miniz_oxide's
/// level 1 wrote 25.5 MB in 10 % more (with miniz_oxide, level 6 took 9× longer than
/// level 1 on the 100k-bucket benchmark for a file 12 % smaller). Deterministic: the
/// gzip header carries no timestamp or file name, and prost writes fields in tag order.
#[cfg(feature = "gzip")]
pub fn encode(p: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    encode_to(p, &mut out).expect("writing to a Vec");
    out
}

/// [`encode`] into `w`, streamed: prost's bytes go through the gzip encoder in pieces of
/// 64 KiB, so neither the raw protobuf nor the gzipped file is ever whole in memory (for
/// a diff of two 52 MB profiles they were 130 MB).
#[cfg(feature = "gzip")]
pub fn encode_to(p: &Profile, w: impl std::io::Write) -> std::io::Result<()> {
    let mut sink = Sink {
        buf: Vec::with_capacity(PIECE),
        w: flate2::write::GzEncoder::new(w, flate2::Compression::new(2)),
        written: 0,
        error: None,
    };
    prost::Message::encode(p, &mut sink).map_err(|e| std::io::Error::other(e.to_string()))?;
    sink.flush();
    if let Some(e) = sink.error {
        return Err(e);
    }
    sink.w.finish()?.flush()
}

/// prost's output buffer over a writer: prost fills `buf`, which goes to `w` whenever it
/// is full. prost's `BufMut` cannot fail, so the first write error is kept (and what
/// follows dropped) for [`encode_to`] to return.
#[cfg(feature = "gzip")]
struct Sink<W: std::io::Write> {
    buf: Vec<u8>,
    w: W,
    written: usize,
    error: Option<std::io::Error>,
}

/// What [`Sink`] hands the gzip encoder at a time.
#[cfg(feature = "gzip")]
const PIECE: usize = 64 << 10;

#[cfg(feature = "gzip")]
impl<W: std::io::Write> Sink<W> {
    /// `buf` to the writer, unless it failed before.
    fn flush(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.w.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.written += self.buf.len();
        self.buf.clear();
    }
}

// SAFETY: `chunk_mut` returns the spare capacity of `buf`, which is never empty, and
// `advance_mut` only marks as initialized the bytes prost wrote there (its contract:
// `cnt` at most the length of the last `chunk_mut`).
#[cfg(feature = "gzip")]
unsafe impl<W: std::io::Write> prost::bytes::BufMut for Sink<W> {
    fn remaining_mut(&self) -> usize {
        usize::MAX - self.written - self.buf.len()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        let len = self.buf.len() + cnt;
        assert!(len <= self.buf.capacity(), "advanced past the chunk");
        // SAFETY: the caller wrote `cnt` bytes into the chunk (the spare capacity).
        unsafe { self.buf.set_len(len) };
    }

    fn chunk_mut(&mut self) -> &mut prost::bytes::buf::UninitSlice {
        if self.buf.len() == self.buf.capacity() {
            self.flush();
        }
        prost::bytes::buf::UninitSlice::uninit(self.buf.spare_capacity_mut())
    }
}
