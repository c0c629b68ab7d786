//! Recognizing what a user handed over: a snapshot, a pprof profile, or a raw serial
//! capture of COBS-framed snapshots (the last good one wins).

use crate::profile::{self, Profile, ProfileError};
use sampler_core::decoded::Snapshot;
use sampler_core::snapshot::{self, DecodeError};

/// A decoded input file.
#[derive(Debug)]
pub enum Input {
    /// A snapshot; `bad_frames` = frames of a serial capture that were not valid
    /// snapshots (0 for a plain snapshot file).
    Snapshot {
        /// The snapshot.
        snapshot: Snapshot,
        /// Bad frames skipped in a serial capture.
        bad_frames: usize,
        /// Frames in the capture (0 = not a capture).
        frames: usize,
    },
    /// A pprof profile.
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
    #[error("{0}")]
    Snapshot(#[from] DecodeError),
    /// Looks like pprof (gzip or protobuf) but is not a valid one.
    #[error("{0}")]
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
    /// Not recognizable at all.
    #[error("not a heapsnap snapshot, a COBS serial capture or a pprof profile (starts with {0:02x?}); as pprof: {1}")]
    Unknown(Vec<u8>, ProfileError),
}

/// Decodes bytes as whatever they are: `HSNP` magic = snapshot; gzip = pprof; else a
/// serial capture if it holds a COBS frame that decodes (or the magic anywhere: a
/// capture whose frames are all bad), else raw pprof protobuf.
pub fn read(bytes: &[u8]) -> Result<Input, InputError> {
    if bytes.is_empty() {
        return Err(InputError::Empty);
    }
    if bytes.starts_with(&snapshot::MAGIC) {
        return Ok(Input::Snapshot {
            snapshot: snapshot::decode(bytes)?,
            bad_frames: 0,
            frames: 0,
        });
    }
    if profile::is_gzip(bytes) {
        return Ok(Input::Profile(profile::decode(bytes)?));
    }
    let capture = snapshot::decode_frames(bytes);
    if let Some(s) = capture.last_good() {
        return Ok(Input::Snapshot {
            snapshot: s.clone(),
            bad_frames: capture.bad_count(),
            frames: capture.frames.len(),
        });
    }
    // COBS leaves the magic intact (it has no zero byte): a capture whose frames all
    // failed still shows it. A protobuf practically never does.
    if bytes.windows(4).any(|w| w == snapshot::MAGIC) {
        let last = capture
            .frames
            .iter()
            .rev()
            .find_map(|f| f.result.as_ref().err())
            .map(|e| e.to_string())
            .unwrap_or_default();
        return Err(InputError::NoGoodFrame {
            frames: capture.frames.len(),
            last,
        });
    }
    match profile::decode(bytes) {
        Ok(p) => Ok(Input::Profile(p)),
        // Parsed as protobuf but breaks a pprof rule: it is a (bad) profile.
        Err(e @ ProfileError::Invalid(_)) => Err(e.into()),
        Err(pe) => Err(InputError::Unknown(
            bytes.iter().take(8).copied().collect(),
            pe,
        )),
    }
}
