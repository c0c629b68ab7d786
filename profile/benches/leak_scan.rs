//! The leak check at scale: a synthetic 64-bit RAM image of 64 MiB holding 1,048,576
//! heap objects (16 to 96 bytes) and 8 KiB of statics, scanned conservatively (every
//! word looked up among the objects) and by type. The objects form a binary tree from
//! the statics, with cross pointers (some interior) hidden among data words and some
//! subtrees cut off, so every pass runs: marking, upgrades from possibly lost, and
//! valgrind's clique grouping of the lost ones. Target (issue 13): at most 2 s a scan.
//!
//! `cargo bench -p heapsnap-profile --bench leak_scan` prints the time per scan; the
//! first lines say what was scanned and what the check found.

use std::collections::BTreeMap;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use heapsnap_profile::leaks::{
    scan_typed, Category, Field, Image, Kind, Memory, Object, Root, Type, Types,
};

const BASE: u64 = 0x1000_0000;
const RAM: usize = 64 << 20;
const OBJECTS: usize = 1 << 20;
/// Statics: an array of pointers to the tree's top nodes.
const ROOT_WORDS: usize = 1024;
const HEAP: u64 = BASE + 0x10000;

struct Workload {
    memory: Memory,
    roots: Vec<Root>,
    objects: Vec<Object>,
    types: Types,
}

fn workload() -> Workload {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut bytes = vec![0u8; RAM];
    let mut objects = Vec::with_capacity(OBJECTS);
    let mut at = HEAP;
    for _ in 0..OBJECTS {
        let size = 16 + (rnd() % 6) * 16;
        objects.push(Object {
            addr: at,
            size,
            stack_id: (rnd() % 64) as u32,
        });
        at += size;
    }
    assert!(at <= BASE + RAM as u64, "the heap fits the image");
    let put = |bytes: &mut [u8], addr: u64, v: u64| {
        let o = (addr - BASE) as usize;
        bytes[o..o + 8].copy_from_slice(&v.to_le_bytes());
    };
    // The tree: node i holds its children 2i+1 and 2i+2 in its first two words; every
    // 97th node has lost its children (their subtrees are lost unless a cross pointer
    // reaches them).
    for i in 0..OBJECTS {
        let o = objects[i];
        for (w, c) in [2 * i + 1, 2 * i + 2].into_iter().enumerate() {
            if c < OBJECTS && i % 97 != 96 {
                put(&mut bytes, o.addr + 8 * w as u64, objects[c].addr);
            }
        }
        for w in 2..o.size / 8 {
            let r = rnd();
            let v = match r % 32 {
                // A cross pointer to a random object, one in four interior.
                0 => {
                    let t = objects[(r >> 8) as usize % OBJECTS];
                    t.addr + if (r >> 40) % 4 == 0 { 8 } else { 0 }
                }
                _ => r % 100_000, // data: counters, lengths
            };
            put(&mut bytes, o.addr + 8 * w, v);
        }
    }
    // The statics: the tree's root and 1023 other data words.
    put(&mut bytes, BASE, objects[0].addr);
    for w in 1..ROOT_WORDS as u64 {
        put(&mut bytes, BASE + 8 * w, rnd() % 1000);
    }
    let roots = vec![Root {
        name: "app::TREE".into(),
        start: BASE,
        size: 8 * ROOT_WORDS as u64,
    }];
    // Types: `static TREE: [*mut Node; 1024]`, `struct Node { left: *mut Node, right:
    // *mut Node }` (the data words after them are untyped, scanned conservatively).
    let node = Type {
        size: 16,
        kind: Kind::Struct {
            name: Some("Node".into()),
            fields: vec![
                Field {
                    name: Some("left".into()),
                    offset: 0,
                    ty: 1,
                },
                Field {
                    name: Some("right".into()),
                    offset: 8,
                    ty: 1,
                },
            ],
            variants: None,
        },
    };
    let ptr = Type {
        size: 8,
        kind: Kind::Pointer { pointee: Some(0) },
    };
    let arr = Type {
        size: 8 * ROOT_WORDS as u64,
        kind: Kind::Array {
            elem: 1,
            count: ROOT_WORDS as u64,
        },
    };
    let types = Types::new(vec![node, ptr, arr], BTreeMap::from([(BASE, 2)]));
    let memory = Memory::new(
        vec![Image {
            name: "ram.bin".into(),
            addr: BASE,
            bytes,
        }],
        8,
        false,
    )
    .unwrap();
    Workload {
        memory,
        roots,
        objects,
        types,
    }
}

fn bench(c: &mut Criterion) {
    let w = workload();
    for (label, types) in [("conservative", None), ("typed", Some(&w.types))] {
        let t = Instant::now();
        let l = scan_typed(&w.memory, w.roots.clone(), w.objects.clone(), types).unwrap();
        let took = t.elapsed();
        let totals: Vec<String> = Category::ALL
            .iter()
            .map(|&k| {
                let (bytes, blocks) = l.totals(k);
                format!("{k}: {bytes} B in {blocks}")
            })
            .collect();
        eprintln!(
            "leak_scan/{label}: {} MiB image, {} objects, one scan {:.3} s; {}",
            RAM >> 20,
            l.objects.len(),
            took.as_secs_f64(),
            totals.join(", ")
        );
    }
    let mut g = c.benchmark_group("leak_scan_64MiB_1M_objects");
    g.sample_size(10);
    g.bench_function("conservative", |b| {
        b.iter(|| scan_typed(&w.memory, w.roots.clone(), w.objects.clone(), None).unwrap())
    });
    g.bench_function("typed", |b| {
        b.iter(|| {
            scan_typed(
                &w.memory,
                w.roots.clone(),
                w.objects.clone(),
                Some(&w.types),
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
