//! (c) Encoding a 1,024-bucket snapshot (256 stacks of 16 frames, 4 sizes per stack)
//! into a caller's buffer, raw and COBS-framed; plus decoding it on the host.
//! Criterion prints ns per snapshot and MiB/s of snapshot bytes.
//!
//! Measured in *thread CPU time* (`CLOCK_THREAD_CPUTIME_ID`), not wall time: the build
//! machine is shared, and time slices lost to other processes would otherwise show up
//! as encoder cost. The work is single-threaded and does no I/O, so CPU time is the
//! cost of the code itself.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sampler_core::decoded::{Bucket, Snapshot, Stack};
use sampler_core::snapshot::{decode, encode_framed_to_slice, encode_to_slice, encode_to_vec};
use sampler_core::{Counters, Cycle, Profiler};

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
        objects: None,
        timestamp: None,
        count_type: None,
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

/// Thread CPU time in nanoseconds, formatted like wall time.
struct ThreadCpu;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns() - start
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

/// A profiler holding the workload's stacks and buckets (rate 1: every call recorded).
fn device_profiler(s: &Snapshot) -> Box<Profiler<256, 4096, 1024, 16, 16>> {
    let prof = Box::new(Profiler::<256, 4096, 1024, 16, 16>::new(1, 1));
    for (i, bk) in s.buckets.iter().enumerate() {
        let frames: Vec<usize> = s.stacks[bk.stack_id as usize]
            .frames
            .iter()
            .map(|&f| f as usize)
            .collect();
        prof.record_alloc(
            (0x1000 + i * 16) as *const u8,
            bk.size as usize,
            &frames[..],
        );
    }
    prof.advance_cycle();
    prof.advance_cycle();
    assert_eq!(
        prof.counters().bucket_table_full + prof.counters().stack_table_full,
        0
    );
    prof
}

fn bench(c: &mut Criterion<ThreadCpu>) {
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
    // The device path: the same workload recorded into the profiler's own tables
    // (`Frames::Usize`, under its lock), written by `write_snapshot_to_slice`.
    let prof = device_profiler(&s);
    let device_len = prof.write_snapshot_to_slice(&[], &mut buf).unwrap().len();
    eprintln!("profiler tables: {device_len} bytes (smaller counts than the synthetic cycles)");
    g.throughput(Throughput::Bytes(device_len as u64));
    g.bench_function(
        BenchmarkId::new("profiler_write_snapshot_to_slice", "1024_buckets"),
        |b| b.iter(|| prof.write_snapshot_to_slice(&[], &mut buf).unwrap().len()),
    );
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function(BenchmarkId::new("decode", "1024_buckets"), |b| {
        b.iter(|| decode(std::hint::black_box(&bytes)).unwrap().buckets.len())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = bench
}
criterion_main!(benches);
