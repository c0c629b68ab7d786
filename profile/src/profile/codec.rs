//! Reading and writing pprof bytes: gzip sniffing with a size cap, prost, validation.

use super::{Profile, ProfileError};
use prost::Message;

/// Default cap on the inflated size of a profile (256 MiB): far beyond any heap
/// profile, small enough that a gzip bomb is an error and not an out-of-memory kill.
pub const DEFAULT_MAX_INFLATED: usize = 256 << 20;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Decodes a pprof profile, gzipped (as pprof writes it) or raw protobuf, and
/// validates it (see [`Profile::check_valid`]), so every later step can index ids and
/// strings without checking again.
pub fn decode(bytes: &[u8]) -> Result<Profile, ProfileError> {
    decode_with_limit(bytes, DEFAULT_MAX_INFLATED)
}

/// [`decode`] with an explicit cap on the inflated size.
pub fn decode_with_limit(bytes: &[u8], max_inflated: usize) -> Result<Profile, ProfileError> {
    if bytes.is_empty() {
        return Err(ProfileError::Empty);
    }
    let inflated;
    let raw: &[u8] = if is_gzip(bytes) {
        inflated = inflate(bytes, max_inflated)?;
        &inflated
    } else {
        bytes
    };
    let p = Profile::decode(raw)?;
    p.check_valid()?;
    Ok(p)
}

/// Does `bytes` start with the gzip magic?
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// Inflates a (possibly multi-member) gzip stream, refusing to produce more than
/// `limit` bytes. Without the `gzip` feature (the browser viewer, which inflates with
/// the browser's `DecompressionStream`) every call is a [`ProfileError::GzipUnsupported`].
#[cfg(feature = "gzip")]
pub fn inflate(bytes: &[u8], limit: usize) -> Result<Vec<u8>, ProfileError> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut dec = flate2::read::MultiGzDecoder::new(bytes).take(limit as u64 + 1);
    dec.read_to_end(&mut out)
        .map_err(|e| ProfileError::Gzip(e.to_string()))?;
    if out.len() > limit {
        return Err(ProfileError::TooLarge { limit });
    }
    Ok(out)
}

/// Inflates a (possibly multi-member) gzip stream: not in this build (no `gzip`
/// feature), so always [`ProfileError::GzipUnsupported`].
#[cfg(not(feature = "gzip"))]
pub fn inflate(_bytes: &[u8], _limit: usize) -> Result<Vec<u8>, ProfileError> {
    Err(ProfileError::GzipUnsupported)
}

/// Encodes a profile as gzipped protobuf, as pprof writes it. Fastest gzip level: on
/// the 100k-bucket benchmark level 6 takes 9× longer (0.46 s vs 0.05 s) for a file only
/// 12 % smaller. Deterministic: the gzip header carries no timestamp or file name, and
/// prost writes fields in tag order.
#[cfg(feature = "gzip")]
pub fn encode(p: &Profile) -> Vec<u8> {
    use std::io::Write;
    let raw = p.encode_to_vec();
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(raw.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail.
    enc.write_all(&raw).expect("writing to a Vec");
    enc.finish().expect("writing to a Vec")
}
