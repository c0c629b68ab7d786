//! Any bytes as a raw serial capture: no panic, frames tile the capture in order, and
//! every good frame re-encodes (COBS-framed) to a frame that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sampler_core::snapshot::{decode_frames, encode_framed_to_vec};

fuzz_target!(|data: &[u8]| {
    let capture = decode_frames(data);
    let mut end = 0;
    for f in &capture.frames {
        assert!(
            f.offset >= end && f.offset + f.len <= data.len(),
            "frames out of order or bounds"
        );
        assert!(f.len > 0);
        end = f.offset + f.len;
        match &f.result {
            Ok(snap) => {
                let framed = encode_framed_to_vec(snap).expect("a decoded snapshot re-encodes");
                assert_eq!(decode_frames(&framed).last_good(), Some(snap));
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    assert_eq!(
        capture.bad_count(),
        capture.frames.iter().filter(|f| f.result.is_err()).count()
    );
});
