//! The snapshot mailbox as a debugger sees it: the raw bytes of the `static` (what
//! `heapsnap pull` reads from the target's RAM), parsed with the host's header parser.
#![cfg(feature = "std")]

use sampler_core::mailbox::{MailboxHeader, MAILBOX_HEADER_LEN, MAILBOX_MAGIC, MAILBOX_VERSION};
use sampler_core::snapshot::decode;
use sampler_core::{MailboxError, Profiler, SnapshotMailbox};

/// The mailbox's memory, byte for byte, as a probe would read it.
fn raw<const N: usize>(m: &SnapshotMailbox<N>) -> Vec<u8> {
    let len = std::mem::size_of::<SnapshotMailbox<N>>();
    // SAFETY: reads the object's own bytes; nothing writes it meanwhile (one thread).
    unsafe { std::slice::from_raw_parts(m as *const _ as *const u8, len) }.to_vec()
}

fn header(bytes: &[u8]) -> MailboxHeader {
    let h: &[u8; MAILBOX_HEADER_LEN] = bytes[..MAILBOX_HEADER_LEN].try_into().unwrap();
    MailboxHeader::parse(h, cfg!(target_endian = "little"))
}

fn profiler() -> Profiler<16, 256, 16, 16> {
    let prof = Profiler::<16, 256, 16, 16>::new(1, 7);
    let stack = [0x0800_1234usize, 0x0800_1100, 0x0800_0400];
    for i in 0..5usize {
        prof.record_alloc((0x2000_0000 + i * 0x100) as *const u8, 16 + i, &stack);
    }
    prof.advance_cycle();
    prof
}

#[test]
fn an_unpublished_mailbox_is_all_zero() {
    let m = SnapshotMailbox::<64>::new();
    assert!(
        raw(&m).iter().all(|&b| b == 0),
        "the static would not be .bss"
    );
    assert_eq!(
        std::mem::size_of::<SnapshotMailbox<64>>(),
        MAILBOX_HEADER_LEN + 64
    );
}

#[test]
fn a_publish_leaves_the_profilers_snapshot_after_a_complete_header() {
    let prof = profiler();
    let m = SnapshotMailbox::<1024>::new();
    let n = m.publish(&prof, &[]).unwrap();
    let n2 = m.publish(&prof, &[]).unwrap();
    assert_eq!(n, n2);
    let bytes = raw(&m);
    let h = header(&bytes);
    assert_eq!(h.magic, MAILBOX_MAGIC);
    assert_eq!(h.version, MAILBOX_VERSION);
    assert_eq!(h.capacity, 1024);
    assert_eq!(
        h.seq, 4,
        "two publishes: odd while writing, even after each"
    );
    assert_eq!((h.len as usize, h.too_big, h.failed), (n, 0, 0));
    let snap = &bytes[MAILBOX_HEADER_LEN..MAILBOX_HEADER_LEN + n];
    assert_eq!(
        snap,
        prof.snapshot_vec(&[], false).unwrap(),
        "the mailbox holds other bytes than the profiler's snapshot"
    );
    assert_eq!(decode(snap).unwrap().buckets.len(), 5);
    assert_eq!(m.published(), 2);
}

#[test]
fn a_snapshot_too_big_for_the_mailbox_is_counted_with_the_size_it_needed() {
    let prof = profiler();
    let full = prof.snapshot_vec(&[], false).unwrap().len();
    let m = SnapshotMailbox::<16>::new();
    assert_eq!(
        m.publish(&prof, &[]),
        Err(MailboxError::TooBig {
            needed: full,
            capacity: 16
        })
    );
    let h = header(&raw(&m));
    assert_eq!((h.len, h.too_big, h.needed as usize), (0, 1, full));
    assert_eq!(h.seq % 2, 0, "the sequence lock was left odd");
    assert!(h.seq > 0);
}
