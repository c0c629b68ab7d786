//! Any bytes as a raw serial capture: no panic, frames tile the capture in order, and
//! every good frame re-encodes (COBS-framed) to a frame that decodes to the same value.
//! The same bytes pushed a chunk at a time (as the browser streams a capture, chunk
//! sizes from the input) give the same frames, whole or for their totals, and each good
//! frame decodes again from a window of the capture holding it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sampler_core::decoded::Snapshot;
use sampler_core::snapshot::{
    decode_frame_in, decode_frames, decode_frames_with, encode_framed_to_vec, CaptureStream, Detail,
};

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
                // Written as the newest version, whatever version it was read from.
                let again = decode_frames(&framed).last_good().cloned().map(|a| Snapshot {
                    version: snap.version,
                    ..a
                });
                assert_eq!(again.as_ref(), Some(snap));
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

    let step = 1 + usize::from(data.first().copied().unwrap_or(0)) % 64;
    for detail in [Detail::Full, Detail::Totals] {
        let mut whole = Vec::new();
        decode_frames_with(data, detail, |f| whole.push(f));
        let mut stream = CaptureStream::new(usize::MAX, detail);
        let mut pushed = Vec::new();
        for chunk in data.chunks(step) {
            stream.push(chunk, |f| pushed.push(f));
        }
        assert_eq!(stream.finish(|f| pushed.push(f)), data.len() as u64);
        assert_eq!(pushed, whole, "pushed {step} bytes at a time");
    }
    for f in capture.frames.iter().filter(|f| f.result.is_ok()) {
        let base = f.offset.saturating_sub(step);
        let window = &data[base..(f.offset + f.len + 1).min(data.len())];
        assert_eq!(
            decode_frame_in(window, base, f.offset, f.len).as_ref(),
            f.result.as_ref()
        );
    }
});
