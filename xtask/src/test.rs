//! `cargo xtask test`: every test, in the order that lets later steps use earlier
//! artifacts (the viewer bundle, the firmware snapshots). `.ci/run` calls this.
//!
//! Each step is run even when an earlier one failed (unless it needs that step's
//! output), and a summary at the end names every failed step.

use crate::tools::{self, cargo, step, Res};
use std::process::Command;
use std::time::Instant;

/// Rustup targets the test command needs (device builds, firmware, browser).
pub const TARGETS: &[&str] = &[
    "thumbv6m-none-eabi",
    "thumbv7em-none-eabihf",
    "thumbv7m-none-eabi",
    "riscv32imac-unknown-none-elf",
    "wasm32-unknown-unknown",
];

/// Debian packages: (command proving it is there, package).
pub const APT: &[(&str, &str)] = &[
    ("go", "golang-go"),
    ("chromium", "chromium"),
    ("chromedriver", "chromium-driver"),
    ("qemu-system-arm", "qemu-system-arm"),
    ("qemu-system-riscv32", "qemu-system-misc"),
    ("node", "nodejs"),
    ("npm", "npm"),
    // The legacy-format corpus (tests/tests/legacy_formats.rs): tcmalloc's heap
    // profiler, gperftools' CPU profiler (libprofiler, in the same packages) and
    // jemalloc with profiling, and jemalloc's reader to compare with.
    ("google-pprof", "google-perftools"),
    ("jeprof", "libjemalloc-dev"),
    // The frame walk's ground truth and core files (symbolize/tests/frame_walk.rs):
    // gdb, and its `gcore`.
    ("gdb", "gdb"),
];

pub fn run(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("`test` takes no arguments (got `{a}`)"));
    }
    let started = Instant::now();
    step("prerequisites");
    disk_check();
    tools::ensure_targets(TARGETS)?;
    tools::ensure_apt(APT)?;
    tools::ensure_apt(crate::firmware_c::APT)?;

    let mut results: Vec<(&str, Res, f64)> = Vec::new();
    let mut go = |name: &'static str, f: &dyn Fn() -> Res| {
        step(name);
        let t = Instant::now();
        let r = f();
        if let Err(e) = &r {
            eprintln!("    step `{name}` failed: {e}");
        }
        results.push((name, r, t.elapsed().as_secs_f64()));
    };

    go(
        "checks: rustfmt, clippy (warnings denied), the viewer's and device's feature sets",
        &checks,
    );
    go(
        "sampler-core device builds, link test, flash size and fast-path instructions",
        &crate::sampler::device_checks,
    );
    go("viewer bundle (release, wasm-opt)", &|| {
        crate::viewer::build(true)
            .and_then(|www| crate::viewer::check_budget(&www.join("pkg")))
            .and_then(|_| crate::viewer::ensure_browser_tools())
            .map(|_| ())
    });
    go(
        "viewer against speedscope and the floor (short benchmark: heapsnap's first flame graph no slower)",
        &|| crate::viewer::peers(&tools::root().join("www"), true),
    );
    go(
        "sampler against jemalloc's profiler (short benchmark: heapsnap's overhead at 512 KiB no worse beyond the noise)",
        &|| crate::peers::run(true),
    );
    go("firmware in QEMU", &|| {
        crate::firmware::build_and_run().map(|_| ())
    });
    go("RISC-V firmware (riscv-rt) in QEMU virt", &|| {
        crate::firmware::build_and_run_riscv().map(|_| ())
    });
    go(
        "C firmware in QEMU (gcc, newlib, --wrap=malloc), sampler-c flash/RAM on thumbv7em",
        &|| crate::firmware_c::build_and_run().and_then(|_| crate::firmware_c::sizes()),
    );
    go(
        "firmware opt-level matrix in QEMU (0 1 2 3 s z, LTO on/off)",
        &|| crate::firmware::build_and_run_matrix().map(|_| ()),
    );
    go(
        "guide: every code block compiled, its firmware at default release in QEMU",
        &|| crate::guide::build_and_run().map(|_| ()),
    );
    go("cargo test --workspace", &cargo_tests);
    go("fuzz targets (bounded)", &crate::fuzz::fuzz_smoke);

    eprintln!("\n==> summary ({:.0} s)", started.elapsed().as_secs_f64());
    let mut failed = 0;
    for (name, r, secs) in &results {
        match r {
            Ok(()) => eprintln!("    ok     {name} ({secs:.0} s)"),
            Err(e) => {
                failed += 1;
                eprintln!("    FAILED {name} ({secs:.0} s): {e}");
            }
        }
    }
    println!(
        "xtask test: {} steps passed, {failed} failed",
        results.len() - failed
    );
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} step(s) failed"))
    }
}

/// What a full run writes under the repository (target/ and the other build folders:
/// 9.6 GB on a fresh clone, 2026-11-25).
const DISK_NEEDED_GB: u64 = 10;

/// Says how much disk the run has, and warns when it is less than a full run writes:
/// a run on a full disk fails in every step at once with "No space left on device",
/// which this line explains up front.
fn disk_check() {
    let out = Command::new("df")
        .args(["-Pk"])
        .arg(tools::root())
        .output()
        .ok()
        .filter(|o| o.status.success());
    // `df -P`: a header, then "fs blocks used available capacity mount", 1 KiB blocks.
    let free_kb = out.as_ref().and_then(|o| {
        let text = String::from_utf8_lossy(&o.stdout);
        text.lines()
            .nth(1)?
            .split_whitespace()
            .nth(3)?
            .parse::<u64>()
            .ok()
    });
    match free_kb {
        Some(kb) => {
            let gb = kb as f64 / 1e6;
            eprintln!("    disk: {gb:.1} GB free where the run writes (a full run writes ~{DISK_NEEDED_GB} GB)");
            if kb < DISK_NEEDED_GB * 1_000_000 {
                eprintln!(
                    "warning: only {gb:.1} GB free: the run may fail with \"No space left on device\""
                );
            }
        }
        None => eprintln!("    disk: free space unknown (`df -Pk` gave no answer)"),
    }
}

/// What the compiler alone does not hold the code to: formatting, clippy with warnings
/// denied (so the device crate's `#![deny(clippy::unwrap_used, …)]` are enforced), and
/// native builds with exactly the features the viewer and the device use (the tests
/// build everything with `--all-features`, which would hide a missing `cfg`).
pub fn checks() -> Res {
    tools::run(cargo().args(["fmt", "--all", "--check"]))?;
    tools::run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]))?;
    tools::run(cargo().args([
        "clippy",
        "-p",
        "sampler-core",
        "--no-default-features",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The device integrations compile only for bare metal: lint each on its target.
    tools::ensure_targets(&["thumbv7m-none-eabi", crate::firmware::RISCV_TARGET])?;
    tools::run(cargo().args([
        "clippy",
        "-p",
        "sampler-core",
        "--target",
        "thumbv7m-none-eabi",
        "--features",
        "cortex-m,defmt",
        "--",
        "-D",
        "warnings",
    ]))?;
    tools::run(cargo().args([
        "clippy",
        "-p",
        "sampler-core",
        "--target",
        crate::firmware::RISCV_TARGET,
        "--features",
        "riscv-rt,defmt",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The C library as a device links it: Thumb-2 (the EHABI walker and the `--wrap`
    // hooks), Thumb-1 (neither) and RISC-V (neither, no Cortex-M critical section).
    for (t, features) in [
        ("thumbv7m-none-eabi", "cortex-m"),
        ("thumbv6m-none-eabi", "cortex-m"),
        ("riscv32imac-unknown-none-elf", ""),
    ] {
        tools::ensure_targets(&[t])?;
        tools::run(cargo().args([
            "clippy",
            "-p",
            "sampler-c",
            "--target",
            t,
            "--features",
            features,
            "--",
            "-D",
            "warnings",
        ]))?;
    }
    tools::run(cargo().args(["build", "-p", "heapsnap-profile", "--no-default-features"]))?;
    tools::run(cargo().args(["build", "-p", "viewer-wasm"]))
}

/// Host tests of every workspace crate, with the paths of artifacts built by earlier
/// steps in the environment (end-to-end tests fail, not skip, when they are missing).
fn cargo_tests() -> Res {
    let mut c = cargo();
    // --no-fail-fast: one failing test binary must not hide the results of the others.
    c.args(["test", "--workspace", "--all-features", "--no-fail-fast"]);
    set_artifact_env(&mut c);
    run_naming_failed_tests(&mut c)
}

/// Runs `cargo test`, passing its output through, and names the failed tests and test
/// binaries in the error: the summary is the part of a CI log that is read, and
/// "exit status 101" alone sends the reader into thousands of lines.
fn run_naming_failed_tests(c: &mut Command) -> Res {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    eprintln!("    $ {c:?}");
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start cargo test: {e}"))?;
    // One thread per pipe, so neither fills while the other is read; each keeps the
    // lines that name a failure.
    fn pass<R: std::io::Read + Send + 'static>(
        r: R,
        to_stderr: bool,
        mut keep: impl FnMut(&str) -> Option<String> + Send + 'static,
    ) -> std::thread::JoinHandle<Vec<String>> {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            for line in BufReader::new(r).lines().map_while(Result::ok) {
                if to_stderr {
                    let _ = writeln!(std::io::stderr(), "{line}");
                } else {
                    let _ = writeln!(std::io::stdout(), "{line}");
                }
                kept.extend(keep(&line));
            }
            kept
        })
    }
    let mut failures = Failures::default();
    let out = pass(child.stdout.take().expect("piped"), false, move |l| {
        failures.line(l)
    });
    let err = pass(child.stderr.take().expect("piped"), true, failed_target);
    let status = child.wait().map_err(|e| format!("cargo test: {e}"))?;
    let kept = out.join().unwrap_or_default();
    let targets = err.join().unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let (tests, panics): (Vec<String>, Vec<String>) =
        kept.into_iter().partition(|k| !k.starts_with(PANIC));
    let mut why = format!("cargo test failed ({status})");
    if !targets.is_empty() {
        why += &format!("; failing targets: {}", targets.join(", "));
    }
    if !tests.is_empty() {
        why += &format!("; failed tests: {}", tests.join(", "));
    }
    // Where and why each failed (the first line of each panic message): a flaky
    // failure seen only in CI is then diagnosed from the summary alone.
    for p in panics.iter().take(8) {
        why += &format!("\n        {p}");
    }
    Err(why)
}

/// Marks a kept panic line among the kept test names.
const PANIC: &str = "panicked at ";

/// libtest's output, read a line at a time: the failed tests' names ("test a::b ...
/// FAILED") and each panic's place and the first line of its message ("thread 'a::b'
/// (123) panicked at src/x.rs:1:2:", then the message).
#[derive(Default)]
struct Failures {
    /// The panic whose message is the next line: its thread's name and place.
    pending: Option<String>,
}

impl Failures {
    fn line(&mut self, line: &str) -> Option<String> {
        if let Some(at) = self.pending.take() {
            let msg: String = line.chars().take(400).collect();
            return Some(format!("{at}: {msg}"));
        }
        if let Some(name) = failed_test(line) {
            return Some(name);
        }
        let (thread, place) = line.split_once(" panicked at ")?;
        let thread = thread.strip_prefix("thread '")?.split('\'').next()?;
        let place = place.trim_end_matches(':');
        if line.ends_with(':') {
            self.pending = Some(format!("{PANIC}{place} ({thread})"));
            None
        } else {
            Some(format!("{PANIC}{place} ({thread})"))
        }
    }
}

/// libtest's line for a failed test: "test a::b ... FAILED".
fn failed_test(line: &str) -> Option<String> {
    let name = line.strip_prefix("test ")?.strip_suffix(" ... FAILED")?;
    Some(name.to_string())
}

/// cargo's line for a failed test binary: "error: test failed, to rerun pass `-p e2e
/// --test firmware_timeline`".
fn failed_target(line: &str) -> Option<String> {
    let target = line.split("to rerun pass ").nth(1)?;
    Some(target.trim_matches('`').to_string())
}

/// Environment shared by tests and the demo: where the artifacts are.
pub fn set_artifact_env(c: &mut Command) {
    let root = tools::root();
    c.env("PATH", tools::path_env())
        .env("HEAPSNAP_WWW", root.join("www"))
        .env(
            "HEAPSNAP_NODE_MODULES",
            tools::tools_dir().join("node_modules"),
        )
        .env("HEAPSNAP_FIRMWARE_OUT", crate::firmware::out_dir())
        .env("HEAPSNAP_FIRMWARE_C_OUT", crate::firmware_c::out_dir());
}

/// `cargo xtask bench`: every criterion benchmark (figures are printed by criterion);
/// `--peers [--short]`: the sampler against jemalloc's profiler instead.
pub fn bench(args: &[String]) -> Res {
    if args.first().map(String::as_str) == Some("--peers") {
        return match &args[1..] {
            [] => crate::peers::run(false),
            [s] if s == "--short" => crate::peers::run(true),
            other => Err(format!(
                "`bench --peers` takes only `--short` (got `{}`)",
                other.join(" ")
            )),
        };
    }
    let mut c = cargo();
    c.args(["bench", "--workspace"]).args(args);
    set_artifact_env(&mut c);
    tools::run(&mut c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_failed_tests_and_targets_from_cargos_own_lines() {
        // Lines as cargo 1.8x and libtest print them.
        assert_eq!(
            failed_test("test uart_capture_timeline_has_a_row ... FAILED").as_deref(),
            Some("uart_capture_timeline_has_a_row")
        );
        assert_eq!(failed_test("test a::b ... ok"), None);
        assert_eq!(failed_test("test result: FAILED. 3 passed; 1 failed"), None);
        assert_eq!(
            failed_target("error: test failed, to rerun pass `-p e2e --test firmware_timeline`")
                .as_deref(),
            Some("-p e2e --test firmware_timeline")
        );
        assert_eq!(failed_target("     Running tests/x.rs"), None);
        // A panic: its place and thread, then the first line of its message.
        let mut f = Failures::default();
        let lines = [
            "---- a::b stdout ----",
            "",
            "thread 'a::b' (11227) panicked at tests/tests/x.rs:74:10:",
            "called `Result::unwrap()` on an `Err` value: NotFound",
            "stack backtrace:",
            "test a::b ... FAILED",
        ];
        let kept: Vec<String> = lines.iter().filter_map(|l| f.line(l)).collect();
        assert_eq!(
            kept,
            [
                "panicked at tests/tests/x.rs:74:10 (a::b): called `Result::unwrap()` on an \
                 `Err` value: NotFound",
                "a::b",
            ]
        );
    }
}
