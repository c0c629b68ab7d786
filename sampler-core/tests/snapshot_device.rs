//! One encoder for device and host: the bytes the profiler writes from its tables are
//! exactly the bytes the host writes from the decoded snapshot.
#![cfg(feature = "std")]

use sampler_core::snapshot::{decode, encode_to_vec, MappingRef};
use sampler_core::Profiler;

#[test]
fn device_bytes_equal_host_reencoding() {
    let prof = Profiler::<16, 256, 16, 16>::new(1, 7);
    let a = [0x0800_1234usize, 0x0800_1100, 0x0800_0400];
    let b = [0x0800_2000usize, 0x0800_0400];
    for (i, (stack, size)) in [
        (&a[..], 16usize),
        (&a[..], 64),
        (&b[..], 1024),
        (&a[..], 16),
    ]
    .into_iter()
    .enumerate()
    {
        prof.record_alloc((0x2000_0000 + i * 0x100) as *const u8, size, stack);
    }
    prof.record_free(0x2000_0000 as *const u8, 16);
    prof.advance_cycle();
    let mappings = [MappingRef {
        start: 0x0800_0000,
        end: 0x0804_0000,
        offset: 0,
        name: "fw.elf",
        build_id: &[0xde, 0xad, 0xbe, 0xef],
    }];
    let mut buf = [0u8; 1024];
    let device = prof
        .write_snapshot_to_slice(&mappings, &mut buf)
        .unwrap()
        .to_vec();

    let snap = decode(&device).unwrap();
    assert_eq!(snap.mappings.len(), 1);
    assert_eq!(snap.stacks.len(), 2);
    assert_eq!(snap.buckets.len(), 3, "{snap:#?}");
    assert_eq!(
        encode_to_vec(&snap).unwrap(),
        device,
        "host re-encoding differs from the device's bytes"
    );
}
