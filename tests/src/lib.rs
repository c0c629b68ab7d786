//! Shared helpers of the end-to-end tests (paths of artifacts built by `cargo xtask test`,
//! the fixture programs, and the reference tool `go tool pprof`).
//!
//! Helpers fail with a message saying what is missing and how to get it; they never
//! skip.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// `target/<profile>/` of the running test (its executable is in `…/deps/`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps")
        .to_path_buf()
}

/// The target directory of the running test.
pub fn target_dir() -> PathBuf {
    profile_dir()
        .parent()
        .expect("target/<profile> has a parent")
        .to_path_buf()
}

/// Runs a command; returns stdout. Panics with the command line, status and both
/// streams when it cannot start or fails.
pub fn run(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    assert!(
        out.status.success(),
        "{shown} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `go` with its caches under `target/` (nothing outside the repository) and no
/// network: the fixtures use the standard library only.
pub fn go() -> Command {
    let mut c = Command::new("go");
    let t = target_dir();
    c.env("GOCACHE", t.join("go-cache"))
        .env("GOPATH", t.join("go-path"))
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("GO111MODULE", "on");
    c
}

/// `go tool pprof ARGS…` → stdout. `go` is installed by `cargo xtask test` (golang-go).
pub fn pprof(args: &[&str], file: &Path) -> String {
    let mut c = go();
    c.args(["tool", "pprof"]).args(args).arg(file);
    if Command::new("go").arg("version").output().is_err() {
        panic!("`go` is not installed: `cargo xtask test` installs golang-go (go tool pprof is the reference reader)");
    }
    run(&mut c)
}

/// A heap profile written by Go's own runtime (`tests/go/heapalloc`: MemProfileRate = 1,
/// allocations in `main.leakSmall`, `main.leakLarge`, `main.churn`, `main.nested` →
/// `main.inner`), at `dir/go-heap.pb.gz`. Builds the Go program into `dir` first.
pub fn go_heap_profile(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let exe = dir.join("heapalloc");
    run(go()
        .current_dir(repo_root().join("tests/go/heapalloc"))
        .args(["build", "-o"])
        .arg(&exe)
        .arg("."));
    let out = dir.join("go-heap.pb.gz");
    run(Command::new(&exe).arg(&out));
    assert!(
        out.is_file(),
        "{} did not write {}",
        exe.display(),
        out.display()
    );
    out
}

/// A binary or example of this workspace: next to the test (`cargo test --workspace`
/// builds both), or, when missing, built with `cargo build ARGS` into a separate target
/// directory (`target/e2e-build`, so it does not wait for the running cargo's lock).
fn workspace_artifact(rel: &str, build_args: &[&str], env_override: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_override) {
        return PathBuf::from(p);
    }
    let name = format!("{rel}{}", std::env::consts::EXE_SUFFIX);
    let here = profile_dir().join(&name);
    if here.is_file() {
        return here;
    }
    let dir = target_dir().join("e2e-build");
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(repo_root())
            .env("CARGO_TARGET_DIR", &dir)
            .arg("build")
            .args(build_args),
    );
    let built = dir.join("debug").join(&name);
    assert!(
        built.is_file(),
        "cargo build {build_args:?} did not produce {}",
        built.display()
    );
    built
}

/// The `heapsnap` binary (host-cli, feature `cli`); `HEAPSNAP_BIN` overrides.
pub fn heapsnap() -> PathBuf {
    workspace_artifact(
        "heapsnap",
        &["-p", "host-cli", "--bin", "heapsnap"],
        "HEAPSNAP_BIN",
    )
}

/// The `host_workload` example of sampler-core (a host program under `ProfiledAlloc`);
/// `HEAPSNAP_HOST_WORKLOAD` overrides.
pub fn host_workload_exe() -> PathBuf {
    workspace_artifact(
        "examples/host_workload",
        &[
            "-p",
            "sampler-core",
            "--example",
            "host_workload",
            "--features",
            "std",
        ],
        "HEAPSNAP_HOST_WORKLOAD",
    )
}

/// Runs `host_workload OUT [args…]` and returns the snapshot path.
pub fn host_workload_snapshot(out: &Path, args: &[&str]) -> PathBuf {
    if let Some(d) = out.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    run(Command::new(host_workload_exe()).arg(out).args(args));
    assert!(out.is_file(), "host_workload wrote no {}", out.display());
    out.to_path_buf()
}

/// The `-top` body from the `Showing nodes…` line on, each line without trailing
/// blanks (pprof pads the name column): what `heapsnap top` must reproduce.
pub fn top_body(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Showing nodes"))
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// `www/` with a built bundle.
pub fn www() -> PathBuf {
    let www = std::env::var_os("HEAPSNAP_WWW")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("www"));
    let wasm = www.join("pkg/viewer_bg.wasm");
    assert!(
        wasm.is_file(),
        "{} is missing: build the viewer with `cargo xtask viewer` (or run `cargo xtask test`)",
        wasm.display()
    );
    www
}

/// The node_modules holding playwright-core.
pub fn node_modules() -> PathBuf {
    let nm = std::env::var_os("HEAPSNAP_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".tools/node_modules"));
    assert!(
        nm.join("playwright-core/package.json").is_file(),
        "playwright-core is not in {}: `cargo xtask test` installs it (npm, into .tools/)",
        nm.display()
    );
    nm
}
