//! The bounded fuzz runs of `cargo xtask test`: every cargo-fuzz target in `fuzz/`
//! for a few seconds each, from the checked-in seeds, failing on any crash.

use std::path::{Path, PathBuf};

use crate::tools::{self, Res};

/// cargo-fuzz release installed when missing (latest on crates.io; `--locked` works).
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Seconds per target: long enough to get past the seeds into every section of each
/// format, short enough for the CI budget (targets × this, plus one build).
const SECONDS_PER_TARGET: u32 = 20;

/// Peak memory of a fuzz run: the targets' entry budgets (64 Ki entries + 8 per input
/// byte, a few MB of model) and their 8 MiB inflate cap, with room for libFuzzer's
/// corpus and AddressSanitizer's own; more is an input that amplifies.
const RSS_LIMIT_MB: u32 = 1024;

/// Largest single allocation: far above what the budgets allow (the 16 MiB buffer of
/// the 8 MiB inflate cap is the largest), far below what an amplifying input asks for
/// (the decoders before the limits: 150 MB for 4 KB of gzip).
const MALLOC_LIMIT_MB: u32 = 64;

/// `cargo xtask fuzz [--seconds N]`: every target for N seconds each (default: the
/// short run of `cargo xtask test`). The long runs the hostile-input policy asks for
/// (`--seconds 600`) are by hand, not in the test command.
pub fn run(args: &[String]) -> Res {
    match args {
        [] => fuzz_for(SECONDS_PER_TARGET),
        [flag, n] if flag == "--seconds" => match n.parse::<u32>() {
            Ok(n) if n > 0 => fuzz_for(n),
            _ => Err(format!("--seconds takes a positive number (got `{n}`)")),
        },
        _ => Err(format!(
            "usage: cargo xtask fuzz [--seconds N] (got `{}`)",
            args.join(" ")
        )),
    }
}

/// Every cargo-fuzz target for a short bounded time.
pub fn fuzz_smoke() -> Res {
    fuzz_for(SECONDS_PER_TARGET)
}

/// Every cargo-fuzz target for `seconds` each, from the seeds, failing on any crash.
fn fuzz_for(seconds: u32) -> Res {
    tools::ensure_nightly("cargo fuzz", &[], &[])?;
    tools::ensure_cargo_bin("cargo-fuzz", "cargo-fuzz", CARGO_FUZZ_VERSION, true)?;
    let dir = tools::root().join("fuzz");

    let list = tools::output(tools::nightly_cargo(&dir).args(["fuzz", "list"]))?;
    let targets: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if targets.is_empty() {
        return Err("`cargo +nightly fuzz list` found no fuzz targets in fuzz/".into());
    }
    eprintln!("    fuzz targets: {}", targets.join(", "));

    // One build for all targets (release + debug assertions + AddressSanitizer).
    tools::run(tools::nightly_cargo(&dir).args(["fuzz", "build"]))?;

    let mut failed = Vec::new();
    for t in &targets {
        let corpus = dir.join("target/smoke-corpus").join(t);
        seed_corpus(t, &corpus)?;
        let mut c = tools::nightly_cargo(&dir);
        c.args(["fuzz", "run", t]).arg(&corpus).arg("--").args([
            format!("-max_total_time={seconds}"),
            format!("-rss_limit_mb={RSS_LIMIT_MB}"),
            "-print_final_stats=1".into(),
        ]);
        // Every decoder bounds what it builds by its input's size (docs/resource-limits.md):
        // a single allocation beyond this from a fuzz-sized input is amplification, a bug.
        c.arg(format!("-malloc_limit_mb={MALLOC_LIMIT_MB}"));
        if let Err(e) = tools::run(&mut c) {
            eprintln!("    fuzz target `{t}` failed: {e} (reproducer under fuzz/artifacts/{t}/)");
            failed.push(*t);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz target(s) crashed: {} (see fuzz/artifacts/)",
            failed.join(", ")
        ))
    }
}

/// A fresh corpus: `fuzz/seeds/<target>/*`, plus the snapshot golden files for the
/// snapshot targets. Fresh each run, so CI and local runs start from the same inputs.
fn seed_corpus(target: &str, corpus: &Path) -> Res {
    let _ = std::fs::remove_dir_all(corpus);
    std::fs::create_dir_all(corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    let root = tools::root();
    let mut dirs: Vec<PathBuf> = vec![root.join("fuzz/seeds").join(target)];
    if target.starts_with("snapshot") {
        dirs.push(root.join("sampler-core/tests/golden"));
    }
    let mut n = 0;
    for d in dirs.iter().filter(|d| d.is_dir()) {
        for entry in std::fs::read_dir(d).map_err(|e| format!("{}: {e}", d.display()))? {
            let p = entry.map_err(|e| e.to_string())?.path();
            if p.is_file() {
                let dest = corpus.join(p.file_name().unwrap_or_default());
                std::fs::copy(&p, &dest).map_err(|e| format!("{}: {e}", p.display()))?;
                n += 1;
            }
        }
    }
    eprintln!("    {target}: {n} seed file(s)");
    Ok(())
}
