//! The chain where it is meant to run: the Cortex-M3 firmware (`firmware/`) ran in QEMU
//! under `cargo xtask test` (or `cargo xtask firmware`) and wrote snapshots over
//! semihosting into `HEAPSNAP_FIRMWARE_OUT`, next to a copy of its ELF. These tests take
//! those real artifacts through `heapsnap convert --elf`, `go tool pprof`, `heapsnap diff`
//! and the viewer in headless Chromium, and check that every one of them points at the
//! firmware's leak, `router::remember_message`, by name and source line.
//!
//! They fail (never skip) when the artifacts are missing: run them through
//! `cargo xtask test`, or `cargo xtask firmware` first and set the variable yourself.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The leaking function, as the firmware's source names it.
const LEAK_FN: &str = "remember_message";
/// Its file in the firmware crate.
const LEAK_FILE: &str = "firmware/src/router.rs";
/// Name of the ELF copy `cargo xtask firmware` puts next to the snapshots.
const ELF_NAME: &str = "heapsnap-firmware.elf";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// `HEAPSNAP_FIRMWARE_OUT`, checked to hold what the firmware run leaves behind.
fn firmware_out() -> PathBuf {
    let Some(dir) = std::env::var_os("HEAPSNAP_FIRMWARE_OUT") else {
        panic!(
            "HEAPSNAP_FIRMWARE_OUT is not set: these tests need the snapshots of a QEMU run; \
             run `cargo xtask test`, or `cargo xtask firmware` and then \
             HEAPSNAP_FIRMWARE_OUT=target/firmware-out cargo test -p e2e --test firmware_e2e"
        )
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.join(ELF_NAME).is_file(),
        "{} is missing: `cargo xtask firmware` did not run (or failed) before these tests",
        dir.join(ELF_NAME).display()
    );
    dir
}

/// The firmware's snapshots, oldest first (`snap-000.bin`, `snap-001.bin`, …).
fn snapshots(dir: &Path) -> Vec<PathBuf> {
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.starts_with("snap-") && n.ends_with(".bin")
        })
        .collect();
    snaps.sort();
    assert!(
        snaps.len() >= 2,
        "{} holds {} snapshot(s); the firmware writes several (see qemu.log there)",
        dir.display(),
        snaps.len()
    );
    snaps
}

/// The `heapsnap` binary cargo built next to this test (host-cli's `cli` feature).
fn heapsnap() -> PathBuf {
    if let Some(p) = std::env::var_os("HEAPSNAP_BIN") {
        return PathBuf::from(p);
    }
    // target/<profile>/deps/firmware_e2e-… → target/<profile>/heapsnap
    let exe = std::env::current_exe().expect("test executable path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join(format!("heapsnap{}", std::env::consts::EXE_SUFFIX)))
        .expect("test executable lives in target/<profile>/deps");
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo build -p host-cli --bin heapsnap` (cargo test \
         --workspace builds it for host-cli's own tests), or set HEAPSNAP_BIN",
        bin.display()
    );
    bin
}

/// Run a command, return stdout; panic with stderr and the command line on failure.
fn run(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Lines of `fn remember_message` in the firmware source (signature to closing brace),
/// read from the file so the test follows edits to it.
fn leak_lines() -> RangeInclusive<u32> {
    let src = std::fs::read_to_string(repo_root().join(LEAK_FILE)).expect("firmware source");
    let lines: Vec<&str> = src.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(&format!("fn {LEAK_FN}(")))
        .unwrap_or_else(|| panic!("{LEAK_FILE} has no fn {LEAK_FN}"));
    let end = (start..lines.len()).find(|&i| lines[i] == "}").expect("closing brace of the function");
    (start as u32 + 1)..=(end as u32 + 1)
}

/// `heapsnap convert --elf` of one snapshot into a gzipped pprof under the test tmp dir.
fn convert(out: &Path, snap: &Path) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("firmware_e2e");
    std::fs::create_dir_all(&tmp).unwrap();
    let pb = tmp.join(snap.with_extension("pb.gz").file_name().unwrap());
    run(Command::new(heapsnap()).arg("convert").arg("--elf").arg(out.join(ELF_NAME)).arg(snap).arg("-o").arg(&pb));
    assert!(pb.is_file(), "heapsnap convert wrote nothing to {}", pb.display());
    pb
}

/// First data row of `go tool pprof -top` (after the `flat  flat% …` header).
fn first_top_row(top: &str) -> &str {
    let mut rows = top.lines().skip_while(|l| !l.trim_start().starts_with("flat")).skip(1);
    rows.next().unwrap_or_else(|| panic!("no rows in pprof -top output:\n{top}"))
}

#[test]
fn pprof_top_names_the_leak_with_file_and_line_from_dwarf() {
    let out = firmware_out();
    let snaps = snapshots(&out);
    let pb = convert(&out, snaps.last().unwrap());
    let top = run(Command::new("go").args(["tool", "pprof", "-top", "-sample_index=inuse_space", "-lines"]).arg(&pb));
    let row = first_top_row(&top);
    assert!(row.contains(LEAK_FN), "the leak is not at the top of inuse_space:\n{top}");
    // `… router::remember_message /path/firmware/src/router.rs:171`
    let loc = row.rsplit(' ').next().unwrap();
    let (file, line) = loc.rsplit_once(':').unwrap_or_else(|| panic!("no file:line in `{row}`"));
    assert!(file.ends_with("src/router.rs"), "top row's file is {file}, not the router's source: `{row}`");
    let line: u32 = line.parse().unwrap_or_else(|_| panic!("line in `{row}` is not a number"));
    let body = leak_lines();
    assert!(body.contains(&line), "line {line} of the top row is outside {LEAK_FN} ({body:?} in {LEAK_FILE})");
}

#[test]
fn diff_of_first_and_last_snapshot_shows_the_leak_grew() {
    let out = firmware_out();
    let snaps = snapshots(&out);
    let (first, last) = (snaps.first().unwrap(), snaps.last().unwrap());
    let diff = run(Command::new(heapsnap()).arg("diff").arg("--elf").arg(out.join(ELF_NAME)).arg(first).arg(last));
    let row = diff
        .lines()
        .find(|l| l.contains(LEAK_FN))
        .unwrap_or_else(|| panic!("{LEAK_FN} is not in `heapsnap diff` of {first:?} → {last:?}:\n{diff}"));
    assert!(row.contains('+'), "{LEAK_FN} did not grow between the first and last snapshot: `{row}`\n{diff}");
}
