//! The C firmware (`firmware-c/`: gcc, newlib, every allocator entry point wrapped with
//! `-Wl,--wrap` onto `libsampler_c.a`) ran in QEMU under `cargo xtask test` (or `cargo
//! xtask firmware-c`) and wrote snapshots over semihosting into `HEAPSNAP_FIRMWARE_C_OUT`
//! with its ELF. These tests take them through `heapsnap convert --elf`, `go tool pprof`
//! and `heapsnap diff`: the C leak is named with its file and line, its stack (walked
//! from GCC's EHABI unwind tables) is the whole call chain in order, and the totals say
//! each allocation was recorded once although newlib's `malloc` calls `_malloc_r`.
//!
//! They fail (never skip) when the artifacts are missing.

use e2e::{first_top_row, pprof, repo_root};
use std::path::{Path, PathBuf};

/// The ELF `cargo xtask firmware-c` leaves next to the snapshots.
const ELF_NAME: &str = "firmware-c.elf";
/// The leak's call chain, innermost first, as main.c writes it (and the reset handler).
const LEAK_CHAIN: [&str; 5] = [
    "remember_subscriber",
    "handle_subscribe",
    "handle_packet",
    "main",
    "reset_handler",
];

/// `HEAPSNAP_FIRMWARE_C_OUT`, checked to hold what the C firmware run leaves behind.
fn out_dir() -> PathBuf {
    e2e::firmware_output(
        "HEAPSNAP_FIRMWARE_C_OUT",
        ELF_NAME,
        "cargo xtask firmware-c",
        "firmware_c_e2e",
    )
}

/// `heapsnap convert --elf` of one snapshot into `target/firmware-c-e2e/<test>.pb.gz`.
fn convert(out: &Path, snap: &Path, test: &str) -> PathBuf {
    e2e::convert_snapshot(
        &out.join(ELF_NAME),
        snap,
        "firmware-c-e2e",
        &format!("{test}.pb.gz"),
    )
}

/// The 1-based line of main.c holding `needle`, read from the source so the test follows
/// edits to it.
fn main_c_line(needle: &str) -> u32 {
    let src = std::fs::read_to_string(repo_root().join("firmware-c/main.c")).unwrap();
    let i = src
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("firmware-c/main.c has no line with `{needle}`"));
    i as u32 + 1
}

#[test]
fn pprof_top_names_the_c_leak_at_its_malloc_line() {
    let out = out_dir();
    let pb = convert(&out, e2e::firmware_snapshots(&out).last().unwrap(), "top");
    let top = pprof(&["-top", "-sample_index=inuse_space", "-lines"], &pb);
    let row = first_top_row(&top);
    // `2.40kB 100% 100% 2.40kB 100%  remember_subscriber /…/firmware-c/main.c:34`
    let line = main_c_line("malloc(sizeof *s)");
    assert!(
        row.contains(" remember_subscriber ")
            && row.ends_with(&format!("firmware-c/main.c:{line}")),
        "the top in-use row is not remember_subscriber at main.c:{line}:\n{top}"
    );
}

/// pprof's stacks, one `Vec` of function names per block of `-traces` (innermost first).
fn traces(pb: &Path, index: &str) -> Vec<(String, Vec<String>)> {
    let text = pprof(&["-traces", &format!("-sample_index={index}")], pb);
    text.split("-----------+")
        .skip(1)
        .filter_map(|b| {
            // The block starts with the rest of the separator line.
            let mut lines = b.lines().skip(1).filter(|l| !l.trim().is_empty());
            let head = lines.next()?.trim().to_string(); // `bytes:  24B` (the size)
            let frames: Vec<String> = lines
                .map(|l| l.split_whitespace().last().unwrap_or("").to_string())
                .collect();
            (!frames.is_empty()).then_some((head, frames))
        })
        .collect()
}

#[test]
fn the_leaks_stack_is_its_whole_call_chain_in_order() {
    let out = out_dir();
    let pb = convert(
        &out,
        e2e::firmware_snapshots(&out).last().unwrap(),
        "traces",
    );
    let stacks = traces(&pb, "inuse_space");
    let leak: Vec<&Vec<String>> = stacks
        .iter()
        .map(|(_, f)| f)
        .filter(|f| f.first().is_some_and(|f| f == LEAK_CHAIN[0]))
        .collect();
    assert!(
        !leak.is_empty(),
        "no in-use stack starts in {}: {stacks:#?}",
        LEAK_CHAIN[0]
    );
    for f in leak {
        assert_eq!(f, &LEAK_CHAIN, "the leak's stack is not its call chain");
    }
    // Every stack, leak or temporary, was walked down to the reset handler.
    for (_, f) in &stacks {
        assert_eq!(f.last().map(String::as_str), Some("reset_handler"), "{f:?}");
    }
}

#[test]
fn malloc_calloc_and_realloc_are_each_recorded_once() {
    let out = out_dir();
    let pb = convert(&out, e2e::firmware_snapshots(&out).last().unwrap(), "alloc");
    // Every temporary's size shows up at handle_packet: malloc(32 + 16·k),
    // calloc(8, 2) and realloc to twice the first.
    let sizes: Vec<String> = traces(&pb, "alloc_space")
        .into_iter()
        .filter(|(_, f)| f.first().is_some_and(|f| f == "handle_packet"))
        .map(|(head, _)| head.trim_start_matches("bytes:").trim().to_string())
        .collect();
    for want in ["32B", "48B", "64B", "80B", "16B", "96B", "128B", "160B"] {
        assert!(
            sizes.iter().any(|s| s == want),
            "no {want} allocation at handle_packet: {sizes:?}"
        );
    }
    // The estimated bytes allocated match the workload's: per packet n = 32 + 16·(seq % 4)
    // bytes, 16 for the calloc, 2n for the realloc, and 24 per fourth packet. A call
    // recorded twice (newlib's malloc calling the wrapped _malloc_r) would add 60%.
    let expected: f64 = (1..=480u32)
        .map(|seq| {
            let n = 32 + 16 * (seq % 4);
            n + 16 + 2 * n + if seq % 4 == 0 { 24 } else { 0 }
        })
        .sum::<u32>() as f64;
    let top = pprof(&["-top", "-sample_index=alloc_space", "-unit=B"], &pb);
    let total: f64 = top
        .lines()
        .find_map(|l| {
            l.split(" of ")
                .nth(1)?
                .strip_suffix(" total")?
                .strip_suffix('B')?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no total in:\n{top}"));
    let ratio = total / expected;
    println!(
        "alloc_space estimate {total} B, the workload allocates {expected} B (ratio {ratio:.3})"
    );
    assert!(
        (0.85..1.15).contains(&ratio),
        "estimated {total} B allocated, expected {expected} B:\n{top}"
    );
}

#[test]
fn diff_of_first_and_last_snapshot_shows_the_c_leak_grew() {
    let (diff, first, last) = e2e::diff_first_and_last(&out_dir(), ELF_NAME);
    let row = first_top_row(&diff);
    assert!(
        row.ends_with(LEAK_CHAIN[0]),
        "the C leak is not what grew most from {first:?} to {last:?}:\n{diff}"
    );
    let growth = row.split_whitespace().next().unwrap();
    // Signed as pprof prints a diff: growth has no sign, shrinkage a `-`.
    assert!(
        !growth.starts_with('-')
            && growth
                .trim_start_matches(['0', '.'])
                .starts_with(|c: char| c.is_ascii_digit()),
        "{} did not grow (flat {growth}):\n{diff}",
        LEAK_CHAIN[0]
    );
}
