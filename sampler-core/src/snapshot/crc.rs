//! The snapshot checksum: CRC-32/ISO-HDLC (the zlib/Ethernet CRC), because every
//! language and most MCU vendor libraries already have it.

use ::crc::{Crc, CRC_32_ISO_HDLC};

/// The encoder's CRC is updated a varint (1-10 bytes) at a time. Device builds compute
/// it bit by bit: no lookup table in flash (1 KiB saved of an 8 KiB budget) for a few
/// ms per snapshot on an MCU, negligible next to any link. Host builds use the
/// byte-wise table, the fastest for such short updates. The CRC is the same either way.
#[cfg(feature = "decode")]
type Impl = ::crc::Table<1>;
#[cfg(not(feature = "decode"))]
type Impl = ::crc::NoTable;

/// Reflected polynomial 0x04C11DB7, init 0xFFFFFFFF, xorout 0xFFFFFFFF
/// (check value of `b"123456789"` is 0xCBF43926).
static CRC32: Crc<u32, Impl> = Crc::<u32, Impl>::new(&CRC_32_ISO_HDLC);

/// Whole buffers (the decoder's check) go through slice-by-16 on hosts.
#[cfg(feature = "decode")]
static CRC32_BULK: Crc<u32, ::crc::Table<16>> = Crc::<u32, ::crc::Table<16>>::new(&CRC_32_ISO_HDLC);
#[cfg(not(feature = "decode"))]
use CRC32 as CRC32_BULK;

/// CRC of `bytes` as stored in a snapshot's last four bytes.
pub fn crc32(bytes: &[u8]) -> u32 {
    CRC32_BULK.checksum(bytes)
}

/// Appends the CRC-32 of everything written through it, computed on the way.
///
/// Same job as postcard's `CrcModifier`, which only implements `try_push` and so runs a
/// CRC update per byte; this one forwards whole varints (`try_extend`), which is what
/// the encoder writes. Output: the sink's, after the 4 CRC bytes (little-endian).
pub(crate) struct CrcFlavor<F> {
    sink: F,
    digest: ::crc::Digest<'static, u32, Impl>,
}

impl<F: postcard::ser_flavors::Flavor> CrcFlavor<F> {
    pub(crate) fn new(sink: F) -> Self {
        Self {
            sink,
            digest: CRC32.digest(),
        }
    }
}

impl<F: postcard::ser_flavors::Flavor> postcard::ser_flavors::Flavor for CrcFlavor<F> {
    type Output = F::Output;

    #[inline]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.digest.update(&[byte]);
        self.sink.try_push(byte)
    }

    #[inline]
    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.digest.update(bytes);
        self.sink.try_extend(bytes)
    }

    fn finalize(mut self) -> postcard::Result<F::Output> {
        self.sink
            .try_extend(&self.digest.finalize().to_le_bytes())?;
        self.sink.finalize()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn check_value_matches_the_catalogue() {
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
    }
}
