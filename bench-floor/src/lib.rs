//! What the machine allows for opening a profile, the floor every heapsnap figure in
//! `cargo xtask bench-viewer --peers` is divided by: one pass over the protobuf fields
//! of an uncompressed pprof profile, with the field reader of the viewer's decoder
//! (`pprof-scan`): every top-level field, every `Sample` read (its values and location
//! bytes), every field of the other messages visited once. Nothing is kept, merged or
//! validated beyond what reading needs. The same code runs natively (`bench-floor`,
//! after `gzip -dc`) and in the browser (this crate for wasm32, after a
//! `DecompressionStream`).

#![deny(unsafe_code)]

/// One pass over `raw`: returns a checksum of what was read (so no part of the pass can
/// be optimized away) and the number of samples, or `None` when `raw` is not protobuf.
pub fn pass(raw: &[u8]) -> Option<(u64, u64)> {
    let (mut sum, mut samples) = (0u64, 0u64);
    let (mut scratch, mut vals, mut labels) = (Vec::new(), Vec::new(), Vec::new());
    let mut pos = 0;
    while pos < raw.len() {
        let (tag, wire, _, body) = pprof_scan::field(raw, &mut pos)?;
        if wire != 2 {
            sum = sum.wrapping_add(body.len() as u64);
            continue;
        }
        if tag == 2 {
            let locs = pprof_scan::read_sample(body, &mut scratch, &mut vals, &mut labels)?;
            let locs = locs.unwrap_or(&scratch);
            sum = vals
                .iter()
                .fold(sum.wrapping_add(locs.len() as u64), |s, v| {
                    s.wrapping_add(*v as u64)
                });
            samples += 1;
        } else if matches!(tag, 1 | 3 | 4 | 5 | 11) {
            // A message (value type, mapping, location, function): each field once.
            let mut p = 0;
            while p < body.len() {
                let (t, _, _, b) = pprof_scan::field(body, &mut p)?;
                sum = sum.wrapping_add(t ^ b.len() as u64);
            }
        } else {
            // A string of the string table, or packed scalars (`comment`'s string ids,
            // which heapsnap's own profiles carry: read as fields, they are not protobuf).
            sum = sum.wrapping_add(body.len() as u64);
        }
    }
    Some((sum, samples))
}

/// The wasm module's interface (no wasm-bindgen: the benchmark instantiates the module
/// itself): the page copies the inflated bytes into the buffer [`floor_buffer`] makes
/// and times [`floor_pass`] over it.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)] // `no_mangle` exports only; nothing else unsafe
mod wasm {
    use std::cell::{Cell, RefCell};

    thread_local! {
        static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        static SUM: Cell<u64> = const { Cell::new(0) };
    }

    /// A zeroed buffer of `len` bytes in linear memory for the profile; its address.
    #[no_mangle]
    pub extern "C" fn floor_buffer(len: usize) -> *mut u8 {
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            *b = vec![0; len];
            b.as_mut_ptr()
        })
    }

    /// [`super::pass`] over the buffer: the number of samples, or -1 when it is not
    /// protobuf.
    #[no_mangle]
    pub extern "C" fn floor_pass() -> f64 {
        BUF.with(|b| match super::pass(&b.borrow()) {
            Some((sum, samples)) => {
                SUM.set(sum);
                samples as f64
            }
            None => -1.0,
        })
    }

    /// The last pass's checksum (low 32 bits), so the pass is observable.
    #[no_mangle]
    pub extern "C" fn floor_sum() -> u32 {
        SUM.get() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::pass;

    /// A profile of `n` samples, each with location ids [1, 2] and values [5, v].
    fn profile(n: usize, v: u8) -> Vec<u8> {
        let sample = [0x0a, 2, 1, 2, 0x12, 2, 5, v];
        let mut p = vec![0x32, 0]; // string_table: [""]
        for _ in 0..n {
            p.extend([0x12, sample.len() as u8]);
            p.extend(sample);
        }
        p
    }

    #[test]
    fn every_sample_is_read_and_its_values_reach_the_checksum() {
        let (sum, samples) = pass(&profile(3, 7)).unwrap();
        assert_eq!(samples, 3);
        let (other, _) = pass(&profile(3, 9)).unwrap();
        assert_ne!(sum, other, "the values are part of the pass");
    }

    #[test]
    fn packed_comment_ids_are_read_as_bytes() {
        let mut p = profile(2, 7);
        p.extend([0x6a, 3, 0x01, 0x80, 0x01]); // comment: string ids [1, 128], packed
        assert_eq!(pass(&p).map(|(_, n)| n), Some(2));
    }

    #[test]
    fn bytes_that_are_not_protobuf_are_refused() {
        assert_eq!(pass(&[0xff]), None);
        let mut cut = profile(2, 7);
        cut.pop();
        assert_eq!(pass(&cut), None, "a sample cut short");
    }
}
