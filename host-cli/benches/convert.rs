//! `heapsnap convert` throughput: a synthetic 100k-bucket snapshot with 16-frame stacks
//! whose frames are real return addresses inside the functions of a real debug ELF
//! (this benchmark's own executable), decoded, symbolized with DWARF (inlined frames
//! included), unsampled and written as gzipped pprof. Target: ≤ 1 s per conversion.
//!
//! `cargo bench -p host-cli --bench convert` (or `cargo xtask bench`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use heapsnap_profile::import::{self as convert, Symbols};
use heapsnap_profile::profile;
use heapsnap_symbolize::{Elf, Resolver};
use object::{Object, ObjectSymbol};
use sampler_core::decoded::{Bucket, Snapshot, Stack};
use sampler_core::Cycle;
use std::time::Duration;

const BUCKETS: usize = 100_000;
const SIZES_PER_STACK: usize = 4;
const DEPTH: usize = 16;
const ADDRESSES: usize = 8192;

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Return addresses inside the ELF's functions (link addresses: the snapshot has no
/// mappings, as a firmware's), and the snapshot built from them.
fn synthetic(elf: &[u8]) -> Snapshot {
    let obj = object::File::parse(elf).expect("bench executable parses");
    let mut funcs: Vec<(u64, u64)> = obj
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() >= 16 && s.address() != 0)
        .map(|s| (s.address(), s.size()))
        .collect();
    funcs.sort();
    funcs.dedup();
    assert!(
        funcs.len() > 500,
        "too few functions in the bench ELF: {}",
        funcs.len()
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pool: Vec<u64> = (0..ADDRESSES)
        .map(|_| {
            let (a, size) = funcs[(rng.next() % funcs.len() as u64) as usize];
            a + 1 + rng.next() % (size - 1)
        })
        .collect();
    let stacks: Vec<Stack> = (0..BUCKETS / SIZES_PER_STACK)
        .map(|id| Stack {
            id: id as u32,
            frames: (0..DEPTH)
                .map(|_| pool[(rng.next() % pool.len() as u64) as usize])
                .collect(),
        })
        .collect();
    let buckets = stacks
        .iter()
        .flat_map(|s| (0..SIZES_PER_STACK as u64).map(move |k| (s.id, 16u64 << k)))
        .map(|(stack_id, size)| {
            let allocs = 1 + size % 7;
            Bucket {
                stack_id,
                size,
                active: Cycle {
                    allocs,
                    frees: allocs / 2,
                    alloc_bytes: allocs * size,
                    free_bytes: allocs / 2 * size,
                },
            }
        })
        .collect();
    Snapshot {
        version: 1,
        word_size: 8,
        sample_rate: 512 * 1024,
        cycle: 1,
        stacks,
        buckets,
        ..Default::default()
    }
}

/// CPU time of this thread (Linux `/proc/thread-self/schedstat`, nanoseconds).
fn thread_cpu() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux schedstat");
    Duration::from_nanos(
        s.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .expect("schedstat run time"),
    )
}

fn bench(c: &mut Criterion) {
    let exe = std::env::current_exe().unwrap();
    let elf_bytes = std::fs::read(&exe).unwrap();
    let snap_bytes = synthetic(&elf_bytes).encode().unwrap();

    // Sanity: the frames symbolize (most to function names with files and lines); and
    // where the time goes, stage by stage (one cold run, thread CPU time).
    struct Cpu(Duration);
    impl Cpu {
        fn elapsed(&self) -> Duration {
            thread_cpu() - self.0
        }
    }
    let t = Cpu(thread_cpu());
    let snap = sampler_core::snapshot::decode(&snap_bytes).unwrap();
    let t_decode = t.elapsed();
    let elf = Elf::parse("bench", &elf_bytes).expect("the bench ELF has DWARF");
    let t_elf = t.elapsed();
    let mut r = Resolver::new(&snap, vec![elf], None).unwrap();
    let mut unique: Vec<u64> = snap
        .stacks
        .iter()
        .flat_map(|s| s.frames.iter().copied())
        .collect();
    unique.sort_unstable();
    unique.dedup();
    for &a in &unique {
        std::hint::black_box(r.resolve(a));
    }
    let t_lookup = t.elapsed();
    for &a in &unique {
        std::hint::black_box(r.resolve(a));
    }
    let t_lookup2 = t.elapsed();
    let p = convert::to_profile(&snap, &mut r as &mut dyn Symbols, &mut |_, _| {});
    let t_convert = t.elapsed();
    let raw = prost::Message::encode_to_vec(&p);
    let t_proto = t.elapsed();
    let gz = profile::encode(&p);
    let t_encode = t.elapsed();
    eprintln!(
        "stages: decode {:?}, ELF+DWARF load {:?}, first DWARF lookup of {} addresses {:?}, warm lookups {:?}, convert (warm lookups again) {:?}, protobuf {:?} ({} bytes), protobuf+gzip {:?} ({} bytes)",
        t_decode,
        t_elf - t_decode,
        unique.len(),
        t_lookup - t_elf,
        t_lookup2 - t_lookup,
        t_convert - t_lookup2,
        t_proto - t_convert,
        raw.len(),
        t_encode - t_proto,
        gz.len()
    );
    let named = p.location.iter().filter(|l| !l.line.is_empty()).count();
    let lines: usize = p.location.iter().map(|l| l.line.len()).sum();
    eprintln!(
        "synthetic snapshot: {} bytes, {} buckets, {} stacks × {DEPTH} frames, {} locations ({} symbolized, {} lines incl. inlined), {} samples",
        snap_bytes.len(),
        snap.buckets.len(),
        snap.stacks.len(),
        p.location.len(),
        named,
        lines,
        p.sample.len()
    );
    assert!(
        named * 10 >= p.location.len() * 9,
        "fewer than 90% of the frames symbolized"
    );

    // Next to the alternative: GNU binutils' addr2line on the same return addresses
    // (minus one, with inlined frames and demangling), when it is installed.
    let probes: String = unique.iter().map(|a| format!("{:#x}\n", a - 1)).collect();
    let wall = std::time::Instant::now();
    let theirs = std::process::Command::new("addr2line")
        .args(["-f", "-i", "-C", "-e"])
        .arg(&exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            // Feed stdin from a thread: addr2line answers as it reads, and a full
            // stdout pipe would otherwise stall both sides.
            let mut stdin = c.stdin.take().unwrap();
            let feeder = std::thread::spawn(move || {
                use std::io::Write;
                stdin.write_all(probes.as_bytes())
            });
            let out = c.wait_with_output();
            let _ = feeder.join();
            out
        });
    match theirs {
        Ok(out) if out.status.success() => {
            let theirs = wall.elapsed();
            let wall = std::time::Instant::now();
            let elf = Elf::parse("bench", &elf_bytes).unwrap();
            let mut r = Resolver::new(&snap, vec![elf], None).unwrap();
            for &a in &unique {
                std::hint::black_box(r.resolve(a));
            }
            let ours = wall.elapsed();
            eprintln!(
                "symbolizing {} addresses (wall, cold): heapsnap {ours:?}, binutils addr2line {theirs:?} ({:.1}x)",
                unique.len(),
                theirs.as_secs_f64() / ours.as_secs_f64()
            );
        }
        _ => eprintln!("(binutils addr2line not available: no comparison)"),
    }

    let mut g = c.benchmark_group("convert");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements(BUCKETS as u64));
    let convert_once = || {
        let snap = sampler_core::snapshot::decode(&snap_bytes).unwrap();
        let elf = Elf::parse("bench", &elf_bytes).unwrap();
        let mut r = Resolver::new(&snap, vec![elf], None).unwrap();
        let p = convert::to_profile(&snap, &mut r as &mut dyn Symbols, &mut |_, _| {});
        profile::encode(&p)
    };
    g.bench_function("100k buckets x 16 frames, DWARF, to pprof.gz (wall)", |b| {
        b.iter(convert_once)
    });
    // The machine is shared: thread CPU time does not count time spent waiting for a core.
    g.bench_function(
        "100k buckets x 16 frames, DWARF, to pprof.gz (thread CPU)",
        |b| {
            b.iter_custom(|iters| {
                let t = thread_cpu();
                for _ in 0..iters {
                    std::hint::black_box(convert_once());
                }
                thread_cpu() - t
            })
        },
    );
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
