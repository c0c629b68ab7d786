//! The snapshot checksum: CRC-32/ISO-HDLC (the zlib/Ethernet CRC), because every
//! language and most MCU vendor libraries already have it.

use ::crc::{Crc, CRC_32_ISO_HDLC};

/// Reflected polynomial 0x04C11DB7, init 0xFFFFFFFF, xorout 0xFFFFFFFF
/// (check value of `b"123456789"` is 0xCBF43926).
pub static CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// CRC of `bytes` as stored in a snapshot's last four bytes.
pub fn crc32(bytes: &[u8]) -> u32 {
    CRC32.checksum(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn check_value_matches_the_catalogue() {
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
    }
}
