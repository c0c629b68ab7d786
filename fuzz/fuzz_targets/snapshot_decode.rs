//! Any bytes into the snapshot decoder: no panic, no unbounded allocation (xtask runs
//! this with `-malloc_limit_mb`), and whatever decodes re-encodes to a snapshot that
//! decodes to the same value (as version 4, whatever version it was read from).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sampler_core::decoded::Snapshot;
use sampler_core::snapshot::{decode, decode_prefix, encode_to_vec, VERSION_SHARED};

fuzz_target!(|data: &[u8]| {
    let whole = decode(data);
    match decode_prefix(data) {
        Ok((snap, used)) => {
            assert!(used <= data.len());
            // `decode` agrees with `decode_prefix` on the same bytes.
            assert_eq!(whole.as_ref().ok(), (used == data.len()).then_some(&snap));
            let again = encode_to_vec(&snap).expect("a decoded snapshot re-encodes");
            // Written as the newest version, whatever version it was read from.
            let again = decode(&again).expect("re-encoded snapshot decodes");
            assert_eq!(again.version, VERSION_SHARED);
            assert_eq!(Snapshot { version: snap.version, ..again }, snap);
        }
        Err(e) => {
            assert!(whole.is_err());
            let _ = e.to_string();
        }
    }
});
