//! The C API as a C program uses it: `tests/c/api_test.c`, compiled by the system `cc`
//! against `include/heapsnap.h` and linked with the host build of `libsampler_c.a`.
//! The program checks return codes and counters itself (exiting non-zero, naming the
//! check); this test runs it, checks what it printed and decodes the snapshot files it
//! wrote with sampler-core's decoder.

use std::path::{Path, PathBuf};
use std::process::Command;

use sampler_c::{HEAPSNAP_DEPTH, HEAPSNAP_STACKS};

/// Objects the C program allocates (its `ALLOCS`): more stacks than the table holds.
const ALLOCS: usize = HEAPSNAP_STACKS + 36;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `libsampler_c.a` for the host with the std critical section, built by cargo into its
/// own target directory (the running `cargo test` holds the lock of the default one).
fn host_staticlib() -> PathBuf {
    let target = root().join("target/sampler-c-host");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(cargo)
        .current_dir(root())
        .args([
            "build",
            "--quiet",
            "-p",
            "sampler-c",
            "--features",
            "std",
            "--target-dir",
        ])
        .arg(&target));
    let lib = target.join("debug/libsampler_c.a");
    assert!(lib.is_file(), "{} was not built", lib.display());
    lib
}

#[test]
fn c_program_uses_the_api() {
    let lib = host_staticlib();
    let dir = root().join("target/sampler-c-host/api-test");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("api_test");
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    run(Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("tests/c/api_test.c"))
        .arg(&lib)
        // What Rust's std needs from the C side on Linux.
        .args([
            "-lpthread",
            "-ldl",
            "-lm",
            "-lrt",
            "-lutil",
            "-lgcc_s",
            "-o",
        ])
        .arg(&exe));
    let (live, freed, framed) = (
        dir.join("live.bin"),
        dir.join("freed.bin"),
        dir.join("framed.bin"),
    );
    let stdout = run(Command::new(&exe).arg(&live).arg(&freed).arg(&framed));
    eprintln!("{stdout}");
    assert!(
        stdout.ends_with("ok\n"),
        "the C program did not finish:\n{stdout}"
    );

    // After the allocations: one bucket per interned stack, each one live object of 16
    // bytes with the two frames the C program gave; the rest counted as dropped.
    let snap = sampler_core::snapshot::decode(&std::fs::read(&live).unwrap()).unwrap();
    assert_eq!(snap.word_size as usize, std::mem::size_of::<usize>());
    assert_eq!(snap.sample_rate, 1);
    assert_eq!(snap.counters.samples, ALLOCS as u64);
    assert_eq!(
        snap.counters.stack_table_full,
        (ALLOCS - HEAPSNAP_STACKS) as u64
    );
    assert!(snap.counters.unknown_frees > 0);
    assert_eq!(snap.stacks.len(), HEAPSNAP_STACKS);
    assert_eq!(snap.buckets.len(), HEAPSNAP_STACKS);
    let mut seen = Vec::new();
    for s in &snap.stacks {
        assert_eq!(s.frames.len(), 2, "{s:?}");
        assert!(s.frames.len() <= HEAPSNAP_DEPTH);
        assert_eq!(s.frames[1], 0x2000);
        seen.push((s.frames[0] - 0x1000) / 4);
    }
    seen.sort();
    assert_eq!(
        seen,
        (0..HEAPSNAP_STACKS as u64).collect::<Vec<_>>(),
        "the first stacks are kept"
    );
    for b in &snap.buckets {
        assert_eq!(
            (b.size, b.active.allocs, b.active.frees),
            (16, 1, 0),
            "{b:?}"
        );
    }
    println!(
        "C API: {} B snapshot of {} stacks; counters {:?}",
        std::fs::metadata(&live).unwrap().len(),
        snap.stacks.len(),
        snap.counters
    );

    // The framed snapshot is the same snapshot in a COBS frame.
    let capture = sampler_core::snapshot::decode_frames(&std::fs::read(&framed).unwrap());
    assert_eq!(capture.bad_count(), 0);
    assert_eq!(capture.last_good(), Some(&snap));

    // After every free (and a realloc that moved object 0): nothing in use.
    let snap = sampler_core::snapshot::decode(&std::fs::read(&freed).unwrap()).unwrap();
    assert_eq!(snap.counters.samples, ALLOCS as u64 + 1);
    let in_use: u64 = snap
        .buckets
        .iter()
        .map(|b| b.active.allocs - b.active.frees)
        .sum();
    assert_eq!(in_use, 0, "{:?}", snap.buckets);
    let frees: u64 = snap.buckets.iter().map(|b| b.active.frees).sum();
    assert_eq!(
        frees, HEAPSNAP_STACKS as u64,
        "every tracked object's free credited"
    );
}
