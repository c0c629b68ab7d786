//! decode(encode(s)) == s, for the fixture and for arbitrary valid snapshots.

mod snapshot_common;

use sampler_core::snapshot::{decode, encode_to_slice, encode_to_vec};

#[test]
fn fixture_round_trips() {
    let s = snapshot_common::small();
    let bytes = encode_to_vec(&s).unwrap();
    assert_eq!(decode(&bytes).unwrap(), s);
}

#[test]
fn slice_and_vec_encoders_agree() {
    let s = snapshot_common::small();
    let mut buf = [0u8; 256];
    let used = encode_to_slice(&s, &mut buf).unwrap();
    assert_eq!(used.to_vec(), encode_to_vec(&s).unwrap());
}
