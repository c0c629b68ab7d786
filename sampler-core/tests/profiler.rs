//! The profiler through its public API: crediting frees, every drop counter,
//! re-entrancy, the allocator wrapper, and what a snapshot carries.
#![cfg(feature = "std")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sampler_core::snapshot::decode;
use sampler_core::{Captured, NoStack, ProfiledAlloc, Profiler, Recorded, StackSource};

type Small = Profiler<4, 16, 4, 4, 8>;

fn p(addr: usize) -> *const u8 {
    addr as *const u8
}

/// Decode a snapshot of `prof` (the real encoder and decoder, as the host reads it).
fn snapshot<const S: usize, const F: usize, const B: usize, const L: usize, const D: usize>(
    prof: &Profiler<S, F, B, L, D>,
) -> sampler_core::decoded::Snapshot {
    let bytes = prof.snapshot_vec(&[], false).expect("encode");
    decode(&bytes).expect("decode")
}

#[test]
fn frees_are_credited_to_the_allocating_bucket() {
    let prof = Profiler::<16, 256, 16, 16>::new(1, 1);
    let a = [0x1111usize, 0x2222];
    let b = [0x3333usize];
    assert_eq!(prof.record_alloc(p(0x100), 32, &a[..]), Recorded::Sampled);
    assert_eq!(prof.record_alloc(p(0x200), 32, &a[..]), Recorded::Sampled);
    assert_eq!(prof.record_alloc(p(0x300), 64, &b[..]), Recorded::Sampled);
    // Free one object of each stack, and an address that was never sampled.
    prof.record_free(p(0x200), 32);
    prof.record_free(p(0x300), 64);
    prof.record_free(p(0x999), 0);
    assert_eq!(prof.live_objects(), 1);
    prof.advance_cycle();
    let s = snapshot(&prof);
    let stack_of = |frames: &[u64]| s.stacks.iter().find(|st| st.frames == frames).unwrap().id;
    let ba = s
        .buckets
        .iter()
        .find(|x| x.stack_id == stack_of(&[0x1111, 0x2222]))
        .unwrap();
    let bb = s
        .buckets
        .iter()
        .find(|x| x.stack_id == stack_of(&[0x3333]))
        .unwrap();
    assert_eq!(
        (
            ba.size,
            ba.active.allocs,
            ba.active.frees,
            ba.active.alloc_bytes,
            ba.active.free_bytes
        ),
        (32, 2, 1, 64, 32)
    );
    assert_eq!((bb.size, bb.active.allocs, bb.active.frees), (64, 1, 1));
    assert_eq!(s.sample_rate, 1);
    assert_eq!(s.cycle, 1);
    assert_eq!(s.word_size as usize, std::mem::size_of::<usize>());
    assert_eq!(s.counters.samples, 3);
}

#[test]
fn full_stack_table_is_counted_not_recorded() {
    let prof = Small::new(1, 1);
    for i in 0..4usize {
        assert_eq!(
            prof.record_alloc(p(0x10 * (i + 1)), 8, &[i][..]),
            Recorded::Sampled
        );
    }
    prof.record_free(p(0x10), 8);
    assert_eq!(
        prof.record_alloc(p(0x100), 8, &[99usize][..]),
        Recorded::Dropped
    );
    let c = prof.counters();
    assert_eq!((c.samples, c.stack_table_full), (5, 1));
    // The frame arena is a second way to fill the stack table: 16 frames of room.
    let prof = Small::new(1, 1);
    assert_eq!(
        prof.record_alloc(p(8), 8, &[1usize; 8][..]),
        Recorded::Sampled
    );
    assert_eq!(
        prof.record_alloc(p(16), 8, &[2usize; 8][..]),
        Recorded::Sampled
    );
    assert_eq!(
        prof.record_alloc(p(24), 8, &[3usize; 1][..]),
        Recorded::Dropped
    );
    assert_eq!(prof.counters().stack_table_full, 1);
}

#[test]
fn full_bucket_table_is_counted() {
    let prof = Small::new(1, 1);
    for size in 1..=4usize {
        assert_eq!(
            prof.record_alloc(p(size * 8), size, &[7usize][..]),
            Recorded::Sampled
        );
        prof.record_free(p(size * 8), size);
    }
    assert_eq!(
        prof.record_alloc(p(0x800), 5, &[7usize][..]),
        Recorded::Dropped
    );
    assert_eq!(prof.counters().bucket_table_full, 1);
    assert_eq!(
        snapshot(&prof).counters.bucket_table_full,
        1,
        "the counter travels in the snapshot"
    );
}

#[test]
fn full_live_map_is_counted_and_the_sample_still_counts_as_allocated() {
    let prof = Small::new(1, 1);
    for i in 1..=5usize {
        assert_eq!(
            prof.record_alloc(p(i * 16), 8, &[1usize][..]),
            Recorded::Sampled
        );
    }
    let c = prof.counters();
    assert_eq!((c.samples, c.live_map_full), (5, 1));
    assert_eq!(prof.live_objects(), 4);
    prof.advance_cycle();
    let s = snapshot(&prof);
    assert_eq!(s.buckets[0].active.allocs, 5);
}

#[test]
fn truncated_stacks_are_counted_and_kept_to_the_depth() {
    let prof = Profiler::<4, 64, 4, 4, 3>::new(1, 1);
    prof.record_alloc(p(8), 8, &[1usize, 2, 3, 4, 5][..]);
    assert_eq!(prof.counters().truncated_stacks, 1);
    let s = snapshot(&prof);
    assert_eq!(s.stacks[0].frames, vec![1, 2, 3]);
}

#[test]
fn unknown_frees_that_pass_the_filter_are_counted() {
    // With a 4-entry live map the filter has 16 slots: some untracked address shares
    // a slot with the tracked one and reaches the (missing) lookup.
    let prof = Small::new(1, 1);
    prof.record_alloc(p(0x1000), 8, &[1usize][..]);
    for a in (0x2000..0x3000).step_by(8) {
        prof.record_free(p(a), 8);
    }
    let c = prof.counters();
    assert!(c.unknown_frees > 0 && c.unknown_frees < 512, "{c:?}");
    assert_eq!(prof.live_objects(), 1, "the tracked object is untouched");
}

/// A stack source that re-enters the profiler, as an interrupt handler that allocates
/// (or an unwinder that allocates) would.
struct Reenter<'a> {
    prof: &'a Small,
    nested: Cell<Option<Recorded>>,
}

impl StackSource for Reenter<'_> {
    fn capture(&self, _b: usize, out: &mut [usize]) -> Captured {
        self.nested
            .set(Some(self.prof.record_alloc(p(0xBAD0), 8, &NoStack)));
        self.prof.record_free(p(0x40), 8);
        assert!(
            !self.prof.advance_cycle(),
            "advance from inside must refuse"
        );
        out[0] = 0xAB;
        Captured {
            len: 1,
            truncated: false,
        }
    }
}

#[test]
fn reentry_is_counted_and_never_deadlocks() {
    let prof = Small::new(1, 1);
    prof.record_alloc(p(0x40), 8, &NoStack);
    let src = Reenter {
        prof: &prof,
        nested: Cell::new(None),
    };
    assert_eq!(prof.record_alloc(p(0x80), 16, &src), Recorded::Sampled);
    assert_eq!(src.nested.get(), Some(Recorded::Dropped));
    let c = prof.counters();
    // nested alloc + nested free of a tracked address + nested advance
    assert_eq!(c.reentrant, 3, "{c:?}");
    assert_eq!(
        prof.live_objects(),
        2,
        "the nested free did not touch the map"
    );
    assert!(snapshot(&prof).counters.reentrant == 3);
}

#[test]
fn rate_zero_records_nothing_and_set_rate_switches() {
    let prof = Small::new(0, 1);
    for i in 0..1000usize {
        assert_eq!(
            prof.record_alloc(p(i * 8 + 8), 1 << 20, &NoStack),
            Recorded::Skipped
        );
    }
    assert_eq!(prof.counters().samples, 0);
    prof.set_rate(1);
    assert_eq!(prof.record_alloc(p(8), 1, &NoStack), Recorded::Sampled);
    assert_eq!(prof.rate(), 1);
}

#[test]
fn the_allocator_wrapper_records_alloc_zeroed_realloc_and_dealloc() {
    let a: ProfiledAlloc<System, NoStack, 16, 64, 16, 16> =
        ProfiledAlloc::new(System, NoStack, 1, 3);
    let l = Layout::from_size_align(24, 8).unwrap();
    unsafe {
        let x = a.alloc(l);
        let z = a.alloc_zeroed(l);
        assert!(std::slice::from_raw_parts(z, 24).iter().all(|&b| b == 0));
        let y = a.realloc(x, l, 4000); // free 24 + alloc 4000
        assert_eq!(a.profiler().live_objects(), 2);
        a.dealloc(y, Layout::from_size_align(4000, 8).unwrap());
        a.dealloc(z, l);
    }
    assert_eq!(a.profiler().live_objects(), 0);
    a.profiler().advance_cycle();
    let s = snapshot(a.profiler());
    let by_size = |n| s.buckets.iter().find(|b| b.size == n).unwrap().active;
    assert_eq!((by_size(24).allocs, by_size(24).frees), (2, 2));
    assert_eq!((by_size(4000).allocs, by_size(4000).frees), (1, 1));
    assert_eq!(s.counters.unknown_frees, 0);
}

#[test]
fn snapshots_stream_into_slices_and_cobs_frames() {
    let prof = Profiler::<16, 256, 16, 16>::new(1, 9);
    prof.record_alloc(p(0x100), 48, &[0x10usize, 0x20][..]);
    prof.advance_cycle();
    let plain = prof.snapshot_vec(&[], false).unwrap();
    let mut buf = [0u8; 512];
    let n = prof.write_snapshot_to_slice(&[], &mut buf).unwrap().len();
    assert_eq!(
        &buf[..n],
        &plain[..],
        "slice and vec paths write the same bytes"
    );
    let framed = prof.snapshot_vec(&[], true).unwrap();
    assert_eq!(
        *framed.last().unwrap(),
        0,
        "COBS frame ends with the delimiter"
    );
    assert!(!framed[..framed.len() - 1].contains(&0));
    let cap = sampler_core::snapshot::decode_frames(&framed);
    assert_eq!(cap.frames.len(), 1);
    assert_eq!(cap.last_good(), Some(&decode(&plain).unwrap()));
    // Too small a buffer is an error, not a panic.
    let mut tiny = [0u8; 8];
    assert!(prof.write_snapshot_to_slice(&[], &mut tiny).is_err());
}

/// The object table (version 2) lists exactly the live sampled objects, each under the
/// stack and size that allocated it; a plain snapshot of the same profiler stays
/// version 1 without one. The bound for it holds, and the live map keeps no address in
/// the clear (a RAM scan must not see the profiler's bookkeeping as references).
#[test]
fn object_table_lists_the_live_sampled_objects() {
    use sampler_core::decoded::LiveObject;
    use sampler_core::snapshot::{encode_to_vec, VERSION_SHARED};
    type P = Profiler<16, 256, 16, 16, 8>;
    let prof = P::new(1, 1);
    let a = [0x1111usize, 0x2222];
    let b = [0x3333usize];
    prof.record_alloc(p(0x5a5a_1000), 32, &a[..]);
    prof.record_alloc(p(0x5a5a_2000), 32, &a[..]);
    prof.record_alloc(p(0x5a5a_3000), 64, &b[..]);
    prof.record_free(p(0x5a5a_2000), 32);
    let bytes = prof
        .with_view(&[], |v| encode_to_vec(&v.with_objects()))
        .unwrap()
        .unwrap();
    let mut buf = vec![0u8; P::MAX_SNAPSHOT_LEN_WITH_OBJECTS];
    let written = prof
        .write_snapshot_with_objects(&[], sampler_core::snapshot::Slice::new(&mut buf))
        .unwrap();
    assert_eq!(&written[..], &bytes[..]);
    assert!(bytes.len() <= P::MAX_SNAPSHOT_LEN_WITH_OBJECTS);
    let s = decode(&bytes).unwrap();
    assert_eq!(s.version, VERSION_SHARED);
    assert!(s.objects.is_some());
    let stack_of = |frames: &[u64]| s.stacks.iter().find(|st| st.frames == frames).unwrap().id;
    let mut objs = s.objects.clone().unwrap();
    objs.sort();
    assert_eq!(
        objs,
        vec![
            LiveObject {
                addr: 0x5a5a_1000,
                stack_id: stack_of(&[0x1111, 0x2222]),
                size: 32
            },
            LiveObject {
                addr: 0x5a5a_3000,
                stack_id: stack_of(&[0x3333]),
                size: 64
            },
        ]
    );
    let plain = snapshot(&prof);
    assert_eq!((plain.version, plain.objects), (VERSION_SHARED, None));
    // The profiler's memory holds no live address as a plain word.
    let raw = unsafe {
        std::slice::from_raw_parts((&prof as *const P).cast::<u8>(), std::mem::size_of::<P>())
    };
    for addr in [0x5a5a_1000usize, 0x5a5a_2000, 0x5a5a_3000] {
        let needle = addr.to_ne_bytes();
        assert!(
            !raw.chunks(needle.len()).any(|w| w == needle),
            "the live map keeps {addr:#x} in the clear"
        );
    }
}
