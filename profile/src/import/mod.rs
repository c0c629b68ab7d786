//! Importers: one file per input format, each with a `sniff` (is this mine? cheap, no
//! full decode) and a reader, and one [`guess`] that tries them in order, as inferno's
//! `collapse/guess.rs` and pprof's `parseLegacy` do. The CLI's input and the viewer's
//! loader both read through [`guess`], so a new format is one file here plus one line
//! in [`FORMATS`].
//!
//! A snapshot is read as itself ([`Input::Snapshot`]): it becomes a profile through
//! [`to_profile`] with a symbolizer passed in, so this crate needs no ELF code.

#[cfg(feature = "snapshot")]
mod contention;
mod folded;
#[cfg(feature = "snapshot")]
mod go_count;
#[cfg(feature = "snapshot")]
mod go_heap;
#[cfg(feature = "snapshot")]
mod gperftools;
#[cfg(feature = "snapshot")]
mod gperftools_cpu;
#[cfg(feature = "snapshot")]
mod java;
#[cfg(feature = "snapshot")]
mod jemalloc;
mod pprof;
#[cfg(feature = "snapshot")]
mod snapshot;

use crate::limits::{LimitError, Limits};
use crate::profile::{Profile, ProfileError};
#[cfg(feature = "snapshot")]
pub use gperftools::{kind_of, legacy, Kind, Legacy, LEGACY, LEGACY_VERSION, OWN_COUNT};
#[cfg(feature = "snapshot")]
use sampler_core::decoded::Snapshot;
#[cfg(feature = "snapshot")]
pub use snapshot::{
    bucket_values, comments, hex, inspect_report, machine_name, mapping_index, scale_heap_sample,
    series, site, snapshot_mappings, to_profile, to_profile_limited, warnings, NoSymbols, Resolved,
    SiteStacks, SymFrame, Symbols, SAMPLE_TYPES,
};

/// A decoded input file.
#[derive(Clone, Debug)]
pub enum Input {
    /// A snapshot; `bad_frames` = frames of a serial capture that were not valid
    /// snapshots (0 for a plain snapshot file).
    #[cfg(feature = "snapshot")]
    Snapshot {
        /// The snapshot.
        snapshot: Snapshot,
        /// Bad frames skipped in a serial capture.
        bad_frames: usize,
        /// Frames in the capture (0 = not a capture).
        frames: usize,
    },
    /// A profile: pprof, or a format read into the pprof model.
    Profile(Profile),
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// Zero bytes.
    #[error("empty input: neither a snapshot nor a pprof profile")]
    Empty,
    /// Starts like a snapshot but is not a valid one.
    #[cfg(feature = "snapshot")]
    #[error(transparent)]
    Snapshot(#[from] sampler_core::snapshot::DecodeError),
    /// Looks like pprof (gzip or protobuf) but is not a valid one.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A serial capture with no good snapshot in it.
    #[error(
        "no valid snapshot in the serial capture: {frames} frame(s), all bad (last error: {last})"
    )]
    NoGoodFrame {
        /// Frames found.
        frames: usize,
        /// Why the last one was bad.
        last: String,
    },
    /// Text that looks like folded stacks but has a bad line.
    #[error("folded stacks, line {line}: {what}")]
    Folded {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// A legacy text profile (gperftools, jemalloc, Go `debug=1`, contention) with a bad
    /// line.
    #[error("{format}, line {line}: {what}")]
    Legacy {
        /// Which format (its [`Format::name`]).
        format: &'static str,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it, and what was expected.
        what: String,
    },
    /// A legacy binary profile (gperftools CPU) with bad bytes.
    #[error("{format}, byte offset {offset}: {what}")]
    LegacyBinary {
        /// Which format (its [`Format::name`]).
        format: &'static str,
        /// Where, from the start of the file.
        offset: usize,
        /// What is wrong there.
        what: String,
    },
    /// Over a resource limit (see [`crate::limits`]).
    #[error(transparent)]
    Limit(Box<LimitError>),
    /// An ELF file where a profile or snapshot was expected.
    #[error("this is an ELF file (a program or firmware image), not a profile or snapshot: give it with --elf, and the snapshot or profile as the input")]
    Elf,
    /// Not recognizable at all.
    #[error("not a heapsnap snapshot, a COBS serial capture or a pprof profile (starts with [{}]); as pprof: {}", hex_list(.0), .1)]
    Unknown(Vec<u8>, ProfileError),
}

/// Bytes as `6e, 6f, 74` (what `{:02x?}` prints inside its brackets), spelled out: the
/// browser's release wasm compiles `Debug` formatting out, and the page shows this
/// message too.
fn hex_list(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 4);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 15)]));
    }
    s
}

/// One input format: how to recognize it and how to read it.
pub struct Format {
    /// What users call it, for messages and tests.
    pub name: &'static str,
    /// Is this file (its whole bytes) in this format? Cheap: looks at a prefix or
    /// scans for a marker, never decodes the whole file.
    pub sniff: fn(&[u8]) -> bool,
    /// Reads a file whose sniff said yes, within the limits.
    pub read: fn(&[u8], &Limits) -> Result<Input, InputError>,
}

/// Every input format, in the order [`guess`] tries them: the most specific marker
/// first, raw protobuf (which has no marker) last.
pub const FORMATS: &[Format] = &[
    ELF,
    #[cfg(feature = "snapshot")]
    snapshot::SNAPSHOT,
    pprof::GZIP,
    #[cfg(feature = "snapshot")]
    gperftools_cpu::GPERFTOOLS_CPU,
    #[cfg(feature = "snapshot")]
    snapshot::CAPTURE,
    #[cfg(feature = "snapshot")]
    go_heap::GO_HEAP,
    #[cfg(feature = "snapshot")]
    gperftools::GPERFTOOLS_HEAP,
    #[cfg(feature = "snapshot")]
    jemalloc::JEMALLOC_HEAP,
    #[cfg(feature = "snapshot")]
    go_count::GO_COUNT,
    #[cfg(feature = "snapshot")]
    java::JAVA,
    #[cfg(feature = "snapshot")]
    contention::CONTENTION,
    folded::FOLDED,
    pprof::PROTOBUF,
];

/// Not an input format: an ELF given where the input goes (it holds the snapshot
/// magic in its `.rodata` when it links sampler-core, and would read as a capture of
/// thousands of bad frames).
const ELF: Format = Format {
    name: "ELF (not an input)",
    sniff: |b| b.starts_with(b"\x7fELF"),
    read: |_, _| Err(InputError::Elf),
};

/// Reads bytes as whatever they are: the first of [`FORMATS`] whose sniff says yes,
/// within the default [`Limits`].
pub fn guess(bytes: &[u8]) -> Result<Input, InputError> {
    guess_limited(bytes, &Limits::default())
}

/// [`guess`] within `limits`: every reader counts what it builds against them (see
/// [`crate::limits`]).
pub fn guess_limited(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    if bytes.is_empty() {
        return Err(InputError::Empty);
    }
    match FORMATS.iter().find(|f| (f.sniff)(bytes)) {
        Some(f) => (f.read)(bytes, limits),
        None => pprof::read_protobuf(bytes, limits),
    }
}

/// Whether [`guess`] reads `bytes` as a pprof profile (gzipped or raw protobuf): then
/// a report that only sums samples by stack may decode them with
/// [`crate::analysis::decode_compact`] instead, as the viewer does.
pub fn is_pprof(bytes: &[u8]) -> bool {
    FORMATS
        .iter()
        .find(|f| (f.sniff)(bytes))
        .is_some_and(|f| f.name == pprof::GZIP.name || f.name == pprof::PROTOBUF.name)
}

/// The name of the format [`guess`] would read `bytes` as.
pub fn guess_format(bytes: &[u8]) -> Option<&'static str> {
    FORMATS.iter().find(|f| (f.sniff)(bytes)).map(|f| f.name)
}

impl From<LimitError> for InputError {
    fn from(e: LimitError) -> Self {
        InputError::Limit(Box::new(e))
    }
}
