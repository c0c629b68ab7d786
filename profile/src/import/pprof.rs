//! pprof's `profile.proto`, gzipped (as pprof writes it) or raw.

use super::{Format, Input, InputError};
use crate::profile::{self, ProfileError};

/// Gzipped pprof: the gzip magic.
pub const GZIP: Format = Format {
    name: "pprof (gzip)",
    sniff: profile::is_gzip,
    read: |b| Ok(Input::Profile(profile::decode(b)?)),
};

/// Raw pprof protobuf. It has no marker, so it is tried last and takes anything.
pub const PROTOBUF: Format = Format {
    name: "pprof (protobuf)",
    sniff: |_| true,
    read: read_protobuf,
};

/// Reads raw protobuf; a file that does not even parse as protobuf is [`InputError::Unknown`]
/// (nothing recognized it), one that parses but breaks a pprof rule is a bad profile.
pub fn read_protobuf(bytes: &[u8]) -> Result<Input, InputError> {
    match profile::decode(bytes) {
        Ok(p) => Ok(Input::Profile(p)),
        Err(e @ ProfileError::Invalid(_)) => Err(e.into()),
        Err(pe) => Err(InputError::Unknown(
            bytes.iter().take(8).copied().collect(),
            pe,
        )),
    }
}
