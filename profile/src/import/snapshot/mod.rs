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
    // Frame by frame, keeping only the last good snapshot and the last error: a capture
    // of 10,000 snapshots never holds more than one decoded (it held them all: 78 MB of
    // RSS for a 9.3 MB capture in `heapsnap inspect`).
    let (mut good, mut frames, mut bad, mut last) = (None, 0, 0, None);
    snapshot::decode_frames_with(bytes, snapshot::Detail::Full, |f| {
        frames += 1;
        match f.result {
            Ok(s) => good = Some(s),
            Err(e) => {
                bad += 1;
                last = Some(e);
            }
        }
    });
    match good {
        Some(snapshot) => Ok(Input::Snapshot {
            snapshot,
            bad_frames: bad,
            frames,
        }),
        None => Err(InputError::NoGoodFrame {
            frames,
            last: last.map(|e| e.to_string()).unwrap_or_default(),
        }),
    }
}
