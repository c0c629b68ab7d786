//! A host program profiled by sampler-core, writing one snapshot: the fixture for the
//! host CLI's `go tool pprof` tests.
//!
//! ```sh
//! cargo run -p sampler-core --example host_workload --features std -- OUT.snap [--rate N] [--seed N] [--rounds N]
//! ```
//!
//! `ProfiledAlloc<System, HostStack>` is the global allocator (default rate 64 KiB,
//! seed 1). The workload is single-threaded and deterministic for a given seed and
//! rate; its shape, by function name (all `#[inline(never)]`, names are stable):
//!
//! | function               | what it does                                      | shows as |
//! |------------------------|---------------------------------------------------|----------|
//! | `workload_main_loop`   | runs `--rounds` rounds (default 40), `advance_cycle()` after each | every stack's root |
//! | `serve_round`          | one round: 50 requests, one cache fill            | |
//! | `handle_request`       | → `decode_request` → `parse_temporaries`          | nested calls |
//! | `parse_temporaries`    | ~300 short-lived `String`s per request, all freed | top of **alloc_space**, ~0 in use |
//! | `leaky_cache_insert`   | 256 × 2 KiB entries per round, never freed        | top of **inuse_space** (≈ 20 MiB) |
//! | `alloc_large_buffers`  | four 1 MiB buffers, kept to the end               | second in inuse_space (4 MiB) |
//!
//! The snapshot carries this process's executable mappings with build ids, so the
//! PIE addresses symbolize against `target/…/examples/host_workload`.

use std::alloc::System;
use std::hint::black_box;
use std::process::ExitCode;

use sampler_core::{mappings, HostStack, ProfiledAlloc};

#[global_allocator]
static HEAP: ProfiledAlloc<System, HostStack, 4096, { 1 << 16 }, 8192, { 1 << 16 }, 64> =
    ProfiledAlloc::new(System, HostStack, 64 * 1024, 1);

const REQUESTS_PER_ROUND: usize = 50;
const CACHE_ENTRIES_PER_ROUND: usize = 256;
const CACHE_ENTRY: usize = 2048;

#[inline(never)]
fn leaky_cache_insert(cache: &mut Vec<Box<[u8]>>, key: usize) {
    let mut entry = vec![0u8; CACHE_ENTRY].into_boxed_slice();
    entry[0] = key as u8;
    cache.push(black_box(entry));
}

#[inline(never)]
fn parse_temporaries(line: &str) -> usize {
    // Tokenize into owned strings, as naive parsers do; everything is dropped here.
    let tokens: Vec<String> = line.split(',').map(str::to_owned).collect();
    let upper: Vec<String> = tokens.iter().map(|t| t.to_uppercase()).collect();
    let reversed: Vec<String> = tokens.iter().map(|t| t.chars().rev().collect()).collect();
    black_box(
        upper
            .iter()
            .chain(&reversed)
            .map(String::len)
            .sum::<usize>()
            + tokens.len(),
    )
}

#[inline(never)]
fn decode_request(id: usize) -> usize {
    let line = (0..100)
        .map(|i| format!("field{}={}", i, id * 31 + i))
        .collect::<Vec<_>>()
        .join(",");
    parse_temporaries(&line)
}

#[inline(never)]
fn handle_request(id: usize) -> usize {
    black_box(decode_request(id))
}

#[inline(never)]
fn alloc_large_buffers() -> Vec<Vec<u8>> {
    (0..4).map(|i| black_box(vec![i as u8; 1 << 20])).collect()
}

#[inline(never)]
fn serve_round(round: usize, cache: &mut Vec<Box<[u8]>>) -> usize {
    let mut total = 0;
    for r in 0..REQUESTS_PER_ROUND {
        total += handle_request(round * REQUESTS_PER_ROUND + r);
    }
    for k in 0..CACHE_ENTRIES_PER_ROUND {
        leaky_cache_insert(cache, round * CACHE_ENTRIES_PER_ROUND + k);
    }
    total
}

#[inline(never)]
fn workload_main_loop(rounds: usize) -> (Vec<Box<[u8]>>, Vec<Vec<u8>>) {
    let mut cache = Vec::new();
    let buffers = alloc_large_buffers();
    for round in 0..rounds {
        black_box(serve_round(round, &mut cache));
        // The end of a main-loop turn: the heap means something here.
        HEAP.profiler().advance_cycle();
    }
    (cache, buffers)
}

struct Args {
    out: String,
    rate: usize,
    seed: u64,
    rounds: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        out: String::new(),
        rate: 64 * 1024,
        seed: 1,
        rounds: 40,
    };
    while let Some(x) = it.next() {
        let mut num = |flag: &str| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{flag} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{flag}: `{v}` is not a number"))
        };
        match x.as_str() {
            "--rate" => a.rate = num("--rate")? as usize,
            "--seed" => a.seed = num("--seed")?,
            "--rounds" => a.rounds = num("--rounds")? as usize,
            f if f.starts_with("--") => return Err(format!("unknown flag `{f}`")),
            _ if a.out.is_empty() => a.out = x,
            _ => return Err(format!("unexpected argument `{x}`")),
        }
    }
    if a.out.is_empty() {
        return Err("usage: host_workload OUT.snap [--rate N] [--seed N] [--rounds N]".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("host_workload: {e}");
            return ExitCode::from(2);
        }
    };
    let prof = HEAP.profiler();
    prof.set_rate(args.rate);
    prof.reseed(args.seed);
    let (cache, buffers) = workload_main_loop(args.rounds);
    prof.advance_cycle();
    // Host-side and allocating: outside the profiler's lock.
    let maps = match mappings::current() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("host_workload: reading /proc/self/maps: {e}");
            return ExitCode::FAILURE;
        }
    };
    let refs = mappings::as_refs(&maps);
    let bytes = match prof.snapshot_vec(&refs, false) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("host_workload: writing the snapshot: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(&args.out, &bytes) {
        eprintln!("host_workload: {}: {e}", args.out);
        return ExitCode::FAILURE;
    }
    let c = prof.counters();
    eprintln!(
        "host_workload: {} bytes to {} (rate {}, seed {}, {} rounds, {} samples, cache {} entries, {} large buffers; counters {:?})",
        bytes.len(),
        args.out,
        args.rate,
        args.seed,
        args.rounds,
        c.samples,
        cache.len(),
        buffers.len(),
        c
    );
    black_box((cache, buffers));
    ExitCode::SUCCESS
}
