//! proptest strategy for valid snapshots (what a correct encoder can be given).

use proptest::collection::{btree_set, vec};
use proptest::prelude::*;
use sampler_core::decoded::{Bucket, Mapping, Snapshot, Stack};
use sampler_core::{Counters, Cycle, HeapTotals};

fn counters() -> impl Strategy<Value = Counters> {
    (
        proptest::array::uniform7(any::<u64>()),
        proptest::option::of(proptest::array::uniform4(any::<u64>())),
    )
        .prop_map(|(c, heap)| {
            let mut counters = Counters {
                samples: c[0],
                stack_table_full: c[1],
                bucket_table_full: c[2],
                live_map_full: c[3],
                reentrant: c[4],
                unknown_frees: c[5],
                truncated_stacks: c[6],
                ..Counters::ZERO
            };
            counters.set_heap(heap.map(|h| HeapTotals {
                allocs: h[0],
                frees: h[1],
                in_use_bytes: h[2],
                peak_bytes: h[3],
            }));
            counters
        })
}

fn mapping() -> impl Strategy<Value = Mapping> {
    (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        ".{0,12}",
        vec(any::<u8>(), 0..21),
    )
        .prop_map(|(a, b, offset, name, build_id)| Mapping {
            start: a.min(b),
            end: a.max(b),
            offset,
            name,
            build_id,
        })
}

/// Frames near a base (as return addresses are) or anywhere in the word.
fn frames(word_max: u64) -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        vec(0..=word_max, 0..8),
        (0..=word_max, vec(-4096i64..4096, 0..40)).prop_map(move |(base, d)| {
            d.iter()
                .map(|&x| (base as i128 + x as i128).clamp(0, word_max as i128) as u64)
                .collect()
        }),
    ]
}

pub fn snapshot() -> impl Strategy<Value = Snapshot> {
    prop_oneof![Just(4u8), Just(8u8), Just(2u8)].prop_flat_map(|word_size| {
        let word_max = if word_size == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * word_size)) - 1
        };
        (
            any::<u64>(),
            any::<u64>(),
            counters(),
            vec(mapping(), 0..3),
            btree_set(any::<u32>(), 0..12),
            // Each stack may end in the outer frames of an earlier one, as stacks do
            // (version 4 writes those as a reference to the earlier stack).
            vec(
                (
                    frames(word_max),
                    proptest::option::of(any::<(prop::sample::Index, prop::sample::Index)>()),
                ),
                12,
            ),
            vec(
                (
                    any::<prop::sample::Index>(),
                    any::<u64>(),
                    proptest::array::uniform4(any::<u64>()),
                ),
                0..30,
            ),
            proptest::option::of((any::<u64>(), 1..=u64::MAX)),
        )
            .prop_map(
                move |(sample_rate, cycle, counters, mappings, ids, frames, buckets, clock)| {
                    let ids: Vec<u32> = ids.into_iter().collect();
                    let mut stacks: Vec<Stack> = Vec::new();
                    for (&id, (mut frames, outer)) in ids.iter().zip(frames) {
                        if let (Some((base, keep)), false) = (outer, stacks.is_empty()) {
                            let base = &stacks[base.index(stacks.len())].frames;
                            let keep = keep.index(base.len() + 1);
                            frames.extend_from_slice(&base[base.len() - keep..]);
                        }
                        stacks.push(Stack { id, frames });
                    }
                    let buckets = if ids.is_empty() {
                        vec![]
                    } else {
                        buckets
                            .into_iter()
                            .map(|(i, size, c)| Bucket {
                                stack_id: ids[i.index(ids.len())],
                                size,
                                active: Cycle {
                                    allocs: c[0],
                                    frees: c[1],
                                    alloc_bytes: c[2],
                                    free_bytes: c[3],
                                },
                            })
                            .collect()
                    };
                    let timestamp =
                        clock.map(
                            |(ticks, ticks_per_second)| sampler_core::snapshot::Timestamp {
                                ticks,
                                ticks_per_second,
                            },
                        );
                    Snapshot {
                        objects: None,
                        // What the encoder writes.
                        version: sampler_core::snapshot::VERSION_SHARED,
                        timestamp,
                        count_type: None,
                        word_size,
                        sample_rate,
                        cycle,
                        counters,
                        mappings,
                        stacks,
                        buckets,
                    }
                },
            )
    })
}
