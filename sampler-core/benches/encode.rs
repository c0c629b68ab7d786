//! (c) Encoding a 1,024-bucket snapshot (256 stacks of 16 frames, 4 sizes per stack)
//! into a caller's buffer, raw and COBS-framed; plus decoding it on the host.
//! Criterion prints ns per snapshot and MiB/s of snapshot bytes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sampler_core::decoded::{Bucket, Snapshot, Stack};
use sampler_core::snapshot::{decode, encode_framed_to_slice, encode_to_slice, encode_to_vec};
use sampler_core::{Counters, Cycle};

/// A firmware-like snapshot: return addresses in a 256 KiB flash image, call chains
/// sharing their outer frames (as real stacks do), sizes 16..4096.
fn workload() -> Snapshot {
    let mut x = 0x2545_f491_u64; // xorshift: deterministic, no rand dependency
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let outer: Vec<u64> = (0..8)
        .map(|_| (0x0800_0000 + rnd() % 0x4_0000) & !1)
        .collect();
    let stacks: Vec<Stack> = (0..256)
        .map(|id| {
            let mut frames: Vec<u64> = (0..8)
                .map(|_| (0x0800_0000 + rnd() % 0x4_0000) & !1)
                .collect();
            frames.extend_from_slice(&outer);
            Stack { id, frames }
        })
        .collect();
    let buckets = (0..1024)
        .map(|i| {
            let size = 16u64 << (i % 4 * 2);
            let allocs = rnd() % 1000;
            let frees = allocs / 2;
            Bucket {
                stack_id: i as u32 / 4,
                size,
                active: Cycle {
                    allocs,
                    frees,
                    alloc_bytes: allocs * size,
                    free_bytes: frees * size,
                },
            }
        })
        .collect();
    Snapshot {
        version: 1,
        word_size: 4,
        sample_rate: 512 * 1024,
        cycle: 1234,
        counters: Counters {
            samples: 250_000,
            ..Default::default()
        },
        mappings: vec![],
        stacks,
        buckets,
    }
}

fn bench(c: &mut Criterion) {
    let s = workload();
    let bytes = encode_to_vec(&s).unwrap();
    let mut buf = vec![0u8; bytes.len() * 2];
    let framed_len = encode_framed_to_slice(&s, &mut buf).unwrap().len();
    eprintln!(
        "snapshot: {} buckets, {} stacks x 16 frames: {} bytes raw, {} bytes COBS-framed",
        s.buckets.len(),
        s.stacks.len(),
        bytes.len(),
        framed_len
    );

    let mut g = c.benchmark_group("snapshot");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function(BenchmarkId::new("encode_to_slice", "1024_buckets"), |b| {
        b.iter(|| {
            encode_to_slice(std::hint::black_box(&s), &mut buf)
                .unwrap()
                .len()
        })
    });
    g.bench_function(
        BenchmarkId::new("encode_framed_to_slice", "1024_buckets"),
        |b| {
            b.iter(|| {
                encode_framed_to_slice(std::hint::black_box(&s), &mut buf)
                    .unwrap()
                    .len()
            })
        },
    );
    g.bench_function(BenchmarkId::new("decode", "1024_buckets"), |b| {
        b.iter(|| decode(std::hint::black_box(&bytes)).unwrap().buckets.len())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
