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

/// Builds the Go program `tests/go/<name>` into `dir` (created if needed); returns the
/// executable.
pub fn go_program(name: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let exe = dir.join(name);
    run(go()
        .current_dir(repo_root().join("tests/go").join(name))
        .args(["build", "-o"])
        .arg(&exe)
        .arg("."));
    exe
}

/// A heap profile written by Go's own runtime (`tests/go/heapalloc`: MemProfileRate = 1,
/// allocations in `main.leakSmall`, `main.leakLarge`, `main.churn`, `main.nested` →
/// `main.inner`), at `dir/go-heap.pb.gz`. Builds the Go program into `dir` first.
pub fn go_heap_profile(dir: &Path) -> PathBuf {
    let exe = go_program("heapalloc", dir);
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

/// The parity corpus of `tests/go/profiles`, written into `dir`: every Go runtime
/// profile at debug=0 (heap, heap2, allocs, cpu, block, mutex, goroutine, threadcreate,
/// and the program's own `example.com/conns` count profile as custom) and the profiles
/// it writes with pprof's own `profile` package (units, units2, frames,
/// utf8; see its main.go). That package is the one `go tool pprof` reads with, vendored
/// in GOROOT (`cmd/vendor/github.com/google/pprof/profile`): it is copied next to the
/// program's source under `dir` and the program's module points at it, so the build
/// needs no network. Returns the files, sorted. The same runtime profiles at `debug=1`
/// (the legacy text formats) are written to `dir/text` (see [`go_text_corpus`]).
pub fn go_profile_corpus(dir: &Path) -> Vec<PathBuf> {
    let goroot = run(go().args(["env", "GOROOT"])).trim().to_owned();
    let vendored = Path::new(&goroot).join("src/cmd/vendor/github.com/google/pprof/profile");
    let (src, pkg) = (dir.join("src/profiles"), dir.join("src/pprof/profile"));
    for d in [&src, &pkg] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    }
    let copy_dir = |from: &Path, to: &Path| {
        let entries = std::fs::read_dir(from).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (pprof's profile package, vendored with golang-go)",
                from.display()
            )
        });
        for e in entries.map(Result::unwrap) {
            let name = e.file_name();
            if !name.to_string_lossy().ends_with("_test.go") && e.path().is_file() {
                std::fs::copy(e.path(), to.join(&name))
                    .unwrap_or_else(|err| panic!("{}: {err}", e.path().display()));
            }
        }
    };
    copy_dir(&vendored, &pkg);
    std::fs::write(
        dir.join("src/pprof/go.mod"),
        "module github.com/google/pprof\n\ngo 1.19\n",
    )
    .unwrap();
    copy_dir(&repo_root().join("tests/go/profiles"), &src);
    let exe = dir.join("profiles");
    run(go()
        .current_dir(&src)
        .args(["build", "-o"])
        .arg(&exe)
        .arg("."));
    let (out, text) = (dir.join("corpus"), dir.join("text"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&text).unwrap();
    run(Command::new(&exe).arg(&out).arg(&text));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// The `debug=1` text twins of the runtime profiles [`go_profile_corpus`] writes into
/// `dir` (heap, allocs, block, mutex, goroutine, threadcreate, custom `.txt`, each
/// written right after its `debug=0` file by the same process), and the program that wrote them (the
/// ELF that symbolizes them).
pub fn go_text_corpus(dir: &Path) -> (PathBuf, PathBuf) {
    go_profile_corpus(dir);
    (dir.join("profiles"), dir.join("text"))
}

/// Two heap profiles of one Go process written by Go's own runtime, before and after a
/// change (`tests/go/heapdiff`: `main.leakLarge` and `main.buffers` release most of
/// their memory, `main.leakSmall` and `main.nested` → `main.inner` keep more,
/// `main.cache` appears), at `dir/go-base.pb.gz` and `dir/go-new.pb.gz`: `(base, new)`.
/// The base's modification time is set an hour back, so "the older file is the base"
/// holds even when both are written within the same millisecond.
pub fn go_heap_profile_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let exe = go_program("heapdiff", dir);
    let (base, new) = (dir.join("go-base.pb.gz"), dir.join("go-new.pb.gz"));
    run(Command::new(&exe).arg(&base).arg(&new));
    for f in [&base, &new] {
        assert!(
            f.is_file(),
            "{} did not write {}",
            exe.display(),
            f.display()
        );
    }
    let older = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&base)
        .and_then(|f| f.set_modified(older))
        .unwrap_or_else(|e| panic!("{}: cannot set its modification time: {e}", base.display()));
    (base, new)
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

/// The `heapsnap` binary (package host-cli); `HEAPSNAP_BIN` overrides.
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

/// One row of pprof's `-top` text, or of the viewer's top table: (name, flat, flat%,
/// sum%, cum, cum%).
#[derive(Debug, Clone, PartialEq)]
pub struct TopRow {
    pub name: String,
    pub flat: i64,
    pub flat_pct: f64,
    pub sum_pct: f64,
    pub cum: i64,
    pub cum_pct: f64,
}

/// Parses `go tool pprof -top -unit=bytes` output (values are exact with that unit:
/// `8388608B`, `-6291456B` in a diff, counts as `5000bytes`).
pub fn parse_pprof_top(text: &str) -> Vec<TopRow> {
    let num = |s: &str| -> i64 {
        let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        digits
            .parse()
            .unwrap_or_else(|_| panic!("pprof value {s:?}"))
    };
    let pct = |s: &str| -> f64 {
        s.trim_end_matches('%')
            .parse()
            .unwrap_or_else(|_| panic!("pprof percentage {s:?}"))
    };
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert!(f.len() >= 6, "unexpected pprof line {l:?}");
            let name = f[5..].join(" ");
            let name = name
                .trim_end_matches(" (inline)")
                .trim_end_matches(" (partial-inline)")
                .to_owned();
            TopRow {
                name,
                flat: num(f[0]),
                flat_pct: pct(f[1]),
                sum_pct: pct(f[2]),
                cum: num(f[3]),
                cum_pct: pct(f[4]),
            }
        })
        .collect()
}

/// The top-table rows a browser script read off the page (`data-value` of the cells):
/// a JSON array of `{name, flat, flatPct, sumPct, cum, cumPct}`.
pub fn page_rows(v: &serde_json::Value) -> Vec<TopRow> {
    v.as_array()
        .unwrap_or_else(|| panic!("top rows: not an array: {v}"))
        .iter()
        .map(|r| TopRow {
            name: r["name"].as_str().expect("name").to_owned(),
            flat: r["flat"].as_f64().expect("flat") as i64,
            flat_pct: r["flatPct"].as_f64().expect("flatPct"),
            sum_pct: r["sumPct"].as_f64().expect("sumPct"),
            cum: r["cum"].as_f64().expect("cum") as i64,
            cum_pct: r["cumPct"].as_f64().expect("cumPct"),
        })
        .collect()
}

/// Whether the viewer's percentage `ours` shows as pprof's printed `pprof`: pprof
/// prints `%5.2f` (≥ 1%) or two significant digits (`%5.2g`, < 1%), and `100%` for
/// anything within ±0.05 of it. pprof prints magnitudes (a diff's −70% is `70.09%`),
/// so magnitudes are compared; [`assert_same_table`] checks the sign separately.
pub fn pct_close(ours: f64, pprof: f64) -> bool {
    let (ours, pprof) = (ours.abs(), pprof.abs());
    let d = (ours - pprof).abs();
    if pprof == 100.0 {
        d <= 0.0501
    } else if pprof >= 1.0 {
        d <= 0.0051
    } else {
        d <= 0.051 * pprof + 1e-12
    }
}

/// The viewer's top table `ours` equals pprof's `-top` rows `theirs`: same functions
/// in the same order, the same flat and cum values, the percentages as pprof prints
/// them. In a diff the viewer keeps the sign on percentages (pprof prints only the
/// magnitude): a percentage must then have the sign of its value (flat, the running
/// sum of flat, cum).
pub fn assert_same_table(what: &str, ours: &[TopRow], theirs: &[TopRow]) {
    let names = |r: &[TopRow]| r.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(ours),
        names(theirs),
        "{what}: rows (in order) differ from go tool pprof -top"
    );
    let mut sum = 0i64;
    for (a, b) in ours.iter().zip(theirs) {
        assert_eq!(
            (a.flat, a.cum),
            (b.flat, b.cum),
            "{what}: {} flat/cum differ from pprof",
            a.name
        );
        sum += b.flat;
        for (x, y, v, col) in [
            (a.flat_pct, b.flat_pct, b.flat, "flat%"),
            (a.sum_pct, b.sum_pct, sum, "sum%"),
            (a.cum_pct, b.cum_pct, b.cum, "cum%"),
        ] {
            assert!(
                pct_close(x, y),
                "{what}: {} {col} is {x} in the viewer, {y} in pprof",
                a.name
            );
            assert!(
                (x < 0.0) == (v < 0),
                "{what}: {} {col} is {x} in the viewer for a value of {v}",
                a.name
            );
        }
    }
}

/// The sample types a browser script read off the page's `sample-type` select
/// (`result["sampleTypes"]`), checked to be the four of a Go heap profile, in order.
pub fn go_heap_sample_types(result: &serde_json::Value) -> Vec<&str> {
    let types: Vec<&str> = result["sampleTypes"]
        .as_array()
        .expect("sampleTypes array")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    assert_eq!(
        types,
        [
            "alloc_objects",
            "alloc_space",
            "inuse_objects",
            "inuse_space"
        ],
        "the sample-type options"
    );
    types
}

/// Runs the browser script `tests/browser/<script>` with node (playwright-core from
/// [`node_modules`]) and returns the JSON it writes to `out_dir/result.json` (a stale
/// one is removed first, so a script that fails early cannot pass on old results).
pub fn browser_script(
    script: &str,
    args: &[&std::ffi::OsStr],
    out_dir: &Path,
) -> serde_json::Value {
    let result = out_dir.join("result.json");
    let _ = std::fs::remove_file(&result);
    run(Command::new("node")
        .arg(repo_root().join("tests/browser").join(script))
        .args(args)
        .env("HEAPSNAP_NODE_MODULES", node_modules()));
    let text = std::fs::read_to_string(&result)
        .unwrap_or_else(|e| panic!("{script} wrote no {}: {e}", result.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", result.display()))
}

/// Opens each case's files together through the viewer's file input, one fresh page
/// per case (`tests/browser/viewer_import.mjs`), and returns each case's report by
/// name (`error`, `status`, `retention`, `comments`, `sampleType`, `sampleTypes`, `top`,
/// `tops`, `importer`, `answers`: see the script). Fails if the page threw anywhere.
pub fn open_in_viewer(out_dir: &Path, cases: &[(&str, Vec<&Path>)]) -> serde_json::Value {
    let www = www();
    let mut args = vec![www.into_os_string(), out_dir.as_os_str().to_owned()];
    for (name, files) in cases {
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        args.push(format!("{name}={}", files.join(",")).into());
    }
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let result = browser_script("viewer_import.mjs", &refs, out_dir);
    assert_eq!(
        result["errors"],
        serde_json::Value::Array(vec![]),
        "uncaught errors in the page"
    );
    result["cases"].clone()
}

/// The directory a firmware run left its snapshots and ELF copy in, named by the
/// environment variable `var` (`HEAPSNAP_FIRMWARE_OUT`, `HEAPSNAP_FIRMWARE_C_OUT`),
/// checked to hold `elf_name`. `how` is the command that makes it, for the message.
pub fn firmware_output(var: &str, elf_name: &str, how: &str, test: &str) -> PathBuf {
    let Some(dir) = std::env::var_os(var) else {
        panic!(
            "{var} is not set: these tests need the snapshots of a QEMU run; run `cargo \
             xtask test`, or `{how}` and then {var}=target/{} cargo test -p e2e --test {test}",
            default_out(var)
        )
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.join(elf_name).is_file(),
        "{} is missing: `{how}` did not run (or failed) before these tests",
        dir.join(elf_name).display()
    );
    dir
}

/// `target/` subfolder the xtask commands write a firmware run into, for messages.
fn default_out(var: &str) -> &'static str {
    match var {
        "HEAPSNAP_FIRMWARE_C_OUT" => "firmware-c-out",
        _ => "firmware-out",
    }
}

/// A firmware run's snapshots, oldest first (`snap-000.bin`, `snap-001.bin`, …); at
/// least two, as every firmware here writes several.
pub fn firmware_snapshots(dir: &Path) -> Vec<PathBuf> {
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

/// `heapsnap convert --elf ELF SNAP -o target/<dir>/<name>`: the gzipped pprof's path,
/// checked to exist. Tests running in parallel pass distinct names.
pub fn convert_snapshot(elf: &Path, snap: &Path, dir: &str, name: &str) -> PathBuf {
    let tmp = target_dir().join(dir);
    std::fs::create_dir_all(&tmp).unwrap();
    let pb = tmp.join(name);
    run(Command::new(heapsnap())
        .arg("convert")
        .arg("--elf")
        .arg(elf)
        .arg(snap)
        .arg("-o")
        .arg(&pb));
    assert!(
        pb.is_file(),
        "heapsnap convert wrote nothing to {}",
        pb.display()
    );
    pb
}

/// First data row of `go tool pprof -top` (after the `flat  flat% …` header).
pub fn first_top_row(top: &str) -> &str {
    top.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or_else(|| panic!("no rows in pprof -top output:\n{top}"))
}

/// `heapsnap diff --sample-index inuse_space --elf` of a firmware run's first and last
/// snapshots: the report's text and the two snapshots, for the message.
pub fn diff_first_and_last(out: &Path, elf_name: &str) -> (String, PathBuf, PathBuf) {
    let snaps = firmware_snapshots(out);
    let (first, last) = (snaps[0].clone(), snaps[snaps.len() - 1].clone());
    let diff = run(Command::new(heapsnap())
        .args(["diff", "--sample-index", "inuse_space", "--elf"])
        .arg(out.join(elf_name))
        .arg(&first)
        .arg(&last));
    (diff, first, last)
}
