//! heapsnap snapshots (docs/snapshot-format.md) and raw serial captures of COBS-framed
//! snapshots (read as one input: the last good one wins; read as a [`series`]: every
//! good frame), and their conversion to a profile.

mod convert;
pub mod inspect;
pub mod series;
pub mod site;

pub(crate) use convert::legacy_frames;
pub use convert::{
    bucket_values, hex, mapping_index, scale_heap_sample, snapshot_mappings, to_profile,
    to_profile_limited, NoSymbols, Resolved, SiteStacks, SymFrame, Symbols, SAMPLE_TYPES,
};
pub use inspect::{comments, machine_name, report as inspect_report, warnings};

use super::{Format, Input, InputError};
use crate::limits::Limits;
use sampler_core::snapshot;

/// A snapshot file: the `HSNP` magic at offset 0, or a file of 1–3 bytes that is the
/// start of it (a snapshot cut short: the decoder then says "truncated").
pub const SNAPSHOT: Format = Format {
    name: "heapsnap snapshot",
    sniff: |b| b.starts_with(&snapshot::MAGIC) || snapshot::MAGIC.starts_with(b),
    read: |b, _| {
        Ok(Input::Snapshot {
            snapshot: snapshot::decode(b)?,
            bad_frames: 0,
            frames: 0,
        })
    },
};

/// A serial capture: COBS leaves the magic intact (it has no zero byte), so every
/// frame shows it after its code byte, even one that fails to decode; a plain snapshot
/// has it at 0 instead. A protobuf practically never shows it.
pub const CAPTURE: Format = Format {
    name: "heapsnap serial capture (COBS)",
    sniff: |b| !b.starts_with(&snapshot::MAGIC) && b.windows(4).any(|w| w == snapshot::MAGIC),
    read: read_capture,
};

fn read_capture(bytes: &[u8], _: &Limits) -> Result<Input, InputError> {
    let capture = snapshot::decode_frames(bytes);
    if let Some(s) = capture.last_good() {
        return Ok(Input::Snapshot {
            snapshot: s.clone(),
            bad_frames: capture.bad_count(),
            frames: capture.frames.len(),
        });
    }
    let last = capture
        .frames
        .iter()
        .rev()
        .find_map(|f| f.result.as_ref().err())
        .map(|e| e.to_string())
        .unwrap_or_default();
    Err(InputError::NoGoodFrame {
        frames: capture.frames.len(),
        last,
    })
}
