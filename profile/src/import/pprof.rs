//! pprof's `profile.proto`, gzipped (as pprof writes it) or raw.

use super::{Format, Input, InputError};
use crate::limits::Limits;
use crate::profile::{self, ProfileError};

/// Gzipped pprof: the gzip magic.
pub const GZIP: Format = Format {
    name: "pprof (gzip)",
    sniff: profile::is_gzip,
    read: |b, limits| Ok(Input::Profile(profile::decode_limited(b, limits)?)),
};

/// Raw pprof protobuf. It has no marker, so it is tried last and takes anything.
pub const PROTOBUF: Format = Format {
    name: "pprof (protobuf)",
    sniff: |_| true,
    read: read_protobuf,
};

/// Reads raw protobuf; a file that does not even parse as protobuf is [`InputError::Unknown`]
/// (nothing recognized it), one that parses but breaks a pprof rule is a bad profile.
pub fn read_protobuf(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    match profile::decode_limited(bytes, limits) {
        Ok(p) => Ok(Input::Profile(p)),
        Err(e @ (ProfileError::Invalid(_) | ProfileError::Limit(_))) => Err(e.into()),
        Err(pe) => Err(InputError::Unknown(
            bytes.iter().take(8).copied().collect(),
            pe,
        )),
    }
}
