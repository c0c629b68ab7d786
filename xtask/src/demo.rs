//! `cargo xtask demo`: the main job end to end. Firmware in QEMU → snapshots →
//! `heapsnap convert --elf` → pprof files → the viewer, served on 127.0.0.1 with the
//! firmware's profile preloaded; and the firmware's UART capture (every snapshot it
//! streamed) with its ELF, served for the viewer's `#capture=…&elf=…` link (the heap
//! over time) and summed up by `heapsnap timeline`.

use crate::tools::{self, step, Res};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Port tried first when `--port` is not given (the next few are tried if it is busy).
const DEFAULT_PORT: u16 = 8787;

struct Opts {
    serve: bool,
    port: Option<u16>,
    /// Profile the host workload instead of the firmware (what happens anyway where
    /// QEMU cannot run).
    host: bool,
    /// Profile the C firmware (`firmware-c/`, gcc + newlib + libsampler_c.a).
    c: bool,
}

fn parse(args: &[String]) -> Res<Opts> {
    let mut opts = Opts {
        serve: true,
        port: None,
        host: false,
        c: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--no-serve" => opts.serve = false,
            "--host" => opts.host = true,
            "--c" => opts.c = true,
            "--port" => {
                let v = it.next().ok_or("`--port` needs a number")?;
                opts.port = Some(
                    v.parse()
                        .map_err(|_| format!("`--port {v}`: not a port number (1-65535)"))?,
                );
            }
            other => {
                return Err(format!(
                    "demo: unknown option `{other}` (options: --no-serve, --port N, --host, --c)"
                ))
            }
        }
    }
    if opts.host && opts.c {
        return Err("demo: `--host` and `--c` each choose what to profile: one of them".into());
    }
    if opts.port == Some(0) {
        return Err("`--port 0`: not a port number (1-65535)".into());
    }
    Ok(opts)
}

pub fn run(args: &[String]) -> Res {
    let opts = parse(args)?;
    let input = if opts.host {
        host_workload()?
    } else if opts.c {
        step("C firmware in QEMU");
        Input {
            what: "C firmware",
            snapshots: crate::firmware_c::build_and_run()?,
            elf: Some(crate::firmware_c::out_dir().join(crate::firmware_c::ELF_NAME)),
            leaks: None,
            capture: None,
        }
    } else {
        profile_input()?
    };

    step("building heapsnap (host-cli, release)");
    let heapsnap = build_heapsnap()?;

    step("converting snapshots to pprof");
    let mut profiles = Vec::new();
    for snap in &input.snapshots {
        let pb = snap.with_extension("pb.gz");
        convert(&heapsnap, input.elf.as_deref(), snap, &pb)?;
        profiles.push(pb);
    }
    let (first, last) = match (input.snapshots.first(), input.snapshots.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => return Err("no snapshots to convert".into()),
    };
    let latest = profiles.last().cloned().ok_or("no profiles")?;

    step(&format!(
        "what grew between the first and the last snapshot ({} → {})",
        name(first),
        name(last)
    ));
    let mut c = Command::new(&heapsnap);
    c.args(["diff", "-n", "8"]);
    if let Some(elf) = &input.elf {
        c.arg("--elf").arg(elf);
    }
    c.arg(first).arg(last);
    tools::run(&mut c)?;

    if let (Some(cap), Some(elf)) = (&input.capture, &input.elf) {
        step("the heap over time: heapsnap timeline of the UART capture");
        let mut c = Command::new(&heapsnap);
        c.args(["timeline", "-n", "5", "--elf"]).arg(elf).arg(cap);
        tools::run(&mut c)?;
    }

    let leak_files = match (&input.leaks, &input.elf) {
        (Some(dir), Some(elf)) => Some(leak_check(&heapsnap, elf, dir)?),
        _ => None,
    };

    if !opts.serve {
        println!(
            "\n{} heap profile(s) of the {} (pprof, gzipped), oldest first:",
            profiles.len(),
            input.what
        );
        for p in &profiles {
            println!("  {}", p.display());
        }
        if let Some(cap) = &input.capture {
            println!(
                "\nthe {}'s UART capture (every snapshot it streamed, COBS-framed):",
                input.what
            );
            println!("  {}", cap.display());
            if let Some(elf) = &input.elf {
                println!("  its ELF: {}", elf.display());
            }
        }
        println!("\nlook at the last one with:");
        println!("  go tool pprof -top -lines {}", latest.display());
        println!("  cargo xtask demo          (the viewer, in the browser)");
        if let Some(l) = &leak_files {
            println!("\nwho holds the memory (the leak-check run: rate 1, RAM image):");
            println!("  leak summary:      {}", l.summary.display());
            println!("  retention profile: {}", l.retained.display());
            println!("  go tool pprof -traces {}", l.retained.display());
        }
        return Ok(());
    }

    step("building the viewer");
    let www = crate::viewer::build(true)?;
    let demo_dir = www.join("demo");
    std::fs::create_dir_all(&demo_dir).map_err(|e| format!("{}: {e}", demo_dir.display()))?;
    let base = profiles.first().cloned().ok_or("no profiles")?;
    for (from, name) in [(&latest, PROFILE_NAME), (&base, BASE_NAME)] {
        let to = demo_dir.join(name);
        std::fs::copy(from, &to)
            .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
    }

    if let Some(l) = &leak_files {
        let to = demo_dir.join(RETAINED_NAME);
        std::fs::copy(&l.retained, &to)
            .map_err(|e| format!("copying {} to {}: {e}", l.retained.display(), to.display()))?;
    }

    // The capture and the ELF that symbolizes it, for `#capture=…&elf=…`.
    let capture_link = match (&input.capture, &input.elf) {
        (Some(cap), Some(elf)) => {
            for (from, name) in [(cap, CAPTURE_NAME), (elf, ELF_NAME)] {
                let to = demo_dir.join(name);
                std::fs::copy(from, &to)
                    .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
            }
            true
        }
        _ => false,
    };

    step("serving the viewer");
    let listener = bind(opts.port)?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    if capture_link {
        println!(
            "\nThe {}'s heap over time (its UART capture and ELF, symbolized in the page):",
            input.what
        );
        println!("  {}", capture_url(port));
    }
    println!(
        "\nThe {}'s heap ({}), straight into the flame graph:",
        input.what,
        name(last)
    );
    println!("  {}", demo_url(port));
    println!(
        "What grew since {} (the viewer's diff against a base):",
        name(first)
    );
    println!("  {}&base=demo/{BASE_NAME}", demo_url(port));
    if let Some(l) = &leak_files {
        println!(
            "Who holds the memory (references, not calls; leak summary in {}):",
            l.summary.display()
        );
        println!("  http://127.0.0.1:{port}/?profile=demo/{RETAINED_NAME}");
    }
    println!(
        "(serving {} on 127.0.0.1:{port}; Ctrl-C to stop)",
        www.display()
    );
    serve(listener, &www)
}

/// Name the served profile has under `www/demo/` (the last snapshot).
pub const PROFILE_NAME: &str = "firmware.pb.gz";
/// The first snapshot's profile, the base of the diff URL.
pub const BASE_NAME: &str = "firmware-base.pb.gz";

/// The UART capture's name under `www/demo/`.
pub const CAPTURE_NAME: &str = "capture.cobs";
/// The firmware ELF's name under `www/demo/` (symbolizes the capture in the page).
pub const ELF_NAME: &str = "heapsnap-firmware.elf";

/// The URL that opens the viewer on the capture and its ELF (same origin, paths
/// relative to `www/`): the heap over time.
pub fn capture_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/#capture=demo/{CAPTURE_NAME}&elf=demo/{ELF_NAME}")
}

/// The retention profile's name under `www/demo/`.
pub const RETAINED_NAME: &str = "firmware-retained.pb.gz";

/// What the leak check of the demo writes next to the leak-check run's files.
struct LeakFiles {
    /// `heapsnap leaks`' text: valgrind's summary and the loss records.
    summary: PathBuf,
    /// `heapsnap retain`'s pprof: reference paths as stacks.
    retained: PathBuf,
}

/// `heapsnap leaks` and `heapsnap retain` over the firmware's leak-check run in `dir`
/// (its snapshot, RAM image, registers and console log, which says where the image
/// starts).
/// `heapsnap leaks` exits 1 on a leak: the demo firmware leaks on purpose, so 0 and 1
/// both go on; anything else is an error.
fn leak_check(heapsnap: &Path, elf: &Path, dir: &Path) -> Res<LeakFiles> {
    step("leak check: who holds the memory (heapsnap leaks, heapsnap retain)");
    let log_path = dir.join(crate::firmware::LOG_NAME);
    let log =
        std::fs::read_to_string(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let addr = log
        .lines()
        .filter(|l| l.contains("leaks-ram.bin"))
        .find_map(|l| l.split(" bytes at ").nth(1))
        .map(str::trim)
        .ok_or_else(|| {
            format!(
                "{}: no `leaks-ram.bin: N bytes at ADDR` line: the leak-check run did not finish",
                log_path.display()
            )
        })?;
    let args = |c: &mut Command| {
        c.arg("--elf")
            .arg(elf)
            .arg("--ram")
            .arg(format!("{}@{addr}", dir.join("leaks-ram.bin").display()))
            // The registers it captured: the stack from their sp is a root, its
            // words named by frame and local (main's `held` batch).
            .arg("--regs")
            .arg(dir.join("leaks-regs.txt"))
            .arg(dir.join("leaks-snap.bin"));
    };
    let summary = dir.join("leaks.txt");
    let mut c = Command::new(heapsnap);
    c.arg("leaks");
    args(&mut c);
    eprintln!("    $ {c:?} > {}", summary.display());
    let out = c
        .output()
        .map_err(|e| format!("cannot start {}: {e}", heapsnap.display()))?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!(
            "heapsnap leaks failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&summary, &out.stdout).map_err(|e| format!("{}: {e}", summary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    for l in text
        .lines()
        .skip_while(|l| !l.starts_with("LEAK SUMMARY"))
        .take(5)
    {
        println!("{l}");
    }
    let retained = dir.join("retained.pb.gz");
    let mut c = Command::new(heapsnap);
    c.arg("retain").arg("-o").arg(&retained);
    args(&mut c);
    tools::run(&mut c)?;
    Ok(LeakFiles { summary, retained })
}

/// The URL that opens the viewer straight into the demo profile (the viewer's preload
/// parameter names a path relative to `www/`).
pub fn demo_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/?profile=demo/{PROFILE_NAME}")
}

/// What gets profiled: the firmware in QEMU, or (where QEMU cannot run) the host workload.
struct Input {
    what: &'static str,
    snapshots: Vec<PathBuf>,
    elf: Option<PathBuf>,
    /// The firmware's leak-check run (its folder), when it had one.
    leaks: Option<PathBuf>,
    /// The firmware's UART capture (COBS frames), when it streams one.
    capture: Option<PathBuf>,
}

fn profile_input() -> Res<Input> {
    let qemu = tools::ensure_targets(&[crate::firmware::TARGET])
        .and_then(|()| crate::firmware::ensure_qemu(&crate::firmware::LM3S6965));
    match qemu {
        Ok(()) => {
            step("firmware in QEMU");
            let snapshots = crate::firmware::build_and_run()?;
            Ok(Input {
                what: "firmware",
                snapshots,
                elf: Some(crate::firmware::elf_path()),
                leaks: Some(crate::firmware::leaks_out_dir()),
                capture: Some(crate::firmware::capture_path()),
            })
        }
        Err(why) => {
            eprintln!("\n    QEMU cannot run here ({why});");
            eprintln!(
                "    falling back to the host workload (sampler-core's `host_workload` example)."
            );
            host_workload()
        }
    }
}

/// The fallback: sampler-core's `host_workload` example (a host program under
/// `ProfiledAlloc`), run twice (10 and 40 rounds of its leaky loop) so `diff` has a
/// base. Its snapshots carry the program's mappings and build id; the example binary
/// symbolizes them.
fn host_workload() -> Res<Input> {
    step("host workload (fallback)");
    let out = crate::firmware::out_dir().join("host");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    for old in crate::firmware::snapshots_in(&out)? {
        std::fs::remove_file(&old).map_err(|e| format!("{}: {e}", old.display()))?;
    }
    // The dev profile: full DWARF (the release profile keeps line tables only, whose
    // short function names hide the crate paths).
    let mut c = tools::cargo();
    c.args([
        "build",
        "-p",
        "sampler-core",
        "--features",
        "std",
        "--example",
        "host_workload",
    ]);
    tools::run(&mut c)?;
    let exe = target_dir().join("debug/examples/host_workload");
    for (i, rounds) in ["10", "40"].iter().enumerate() {
        let snap = out.join(format!("snap-{i:03}.bin"));
        tools::run(Command::new(&exe).arg(&snap).args(["--rounds", rounds]))?;
    }
    let snapshots = crate::firmware::snapshots_in(&out)?;
    if snapshots.len() < 2 {
        return Err(format!(
            "the host workload wrote {} snapshot(s) into {}",
            snapshots.len(),
            out.display()
        ));
    }
    Ok(Input {
        what: "host workload",
        snapshots,
        elf: Some(exe),
        leaks: None,
        capture: None,
    })
}

/// `cargo build --release -p host-cli --bin heapsnap`; returns the binary's path.
fn build_heapsnap() -> Res<PathBuf> {
    let mut c = tools::cargo();
    c.args(["build", "--release", "-p", "host-cli", "--bin", "heapsnap"]);
    tools::run(&mut c)?;
    let bin = target_dir().join("release/heapsnap");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "cargo built heapsnap but {} is missing",
            bin.display()
        ))
    }
}

/// The workspace's cargo target dir (CARGO_TARGET_DIR if set, else `target/`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => tools::root().join(d),
        None => tools::root().join("target"),
    }
}

fn name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Bind 127.0.0.1: the given port, or the first free one from [`DEFAULT_PORT`].
fn bind(port: Option<u16>) -> Res<TcpListener> {
    if let Some(p) = port {
        return TcpListener::bind(("127.0.0.1", p)).map_err(|e| {
            format!("cannot listen on 127.0.0.1:{p}: {e} (choose another with --port N)")
        });
    }
    let mut last = None;
    for p in DEFAULT_PORT..DEFAULT_PORT + 20 {
        match TcpListener::bind(("127.0.0.1", p)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(format!(
        "no free port in 127.0.0.1:{DEFAULT_PORT}-{} ({}); choose one with --port N",
        DEFAULT_PORT + 19,
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}

/// A small static file server for `root` (GET and HEAD, one thread per connection).
/// Only files under `root` are served; `..` and absolute paths are refused.
pub fn serve(listener: TcpListener, root: &Path) -> Res {
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        let root = root.to_path_buf();
        std::thread::spawn(move || {
            let _ = handle(stream, &root);
        });
    }
    Ok(())
}

fn handle(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    // The request line, then headers up to the blank line (bounded: 64 lines).
    reader.by_ref().take(8192).read_line(&mut request)?;
    for _ in 0..64 {
        let mut h = String::new();
        if reader.by_ref().take(8192).read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
    }
    let mut parts = request.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method != "GET" && method != "HEAD" {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"only GET and HEAD\n",
            true,
        );
    }
    let Some(file) = resolve(root, target) else {
        return respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found\n",
            method == "GET",
        );
    };
    match std::fs::read(&file) {
        Ok(body) => respond(&mut stream, "200 OK", mime(&file), &body, method == "GET"),
        Err(_) => respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found\n",
            method == "GET",
        ),
    }
}

/// Map a request target (`/a/b?query`) to a file under `root`; `/` and directories
/// map to their `index.html`. `None` for anything outside `root` or missing.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let mut file = root.to_path_buf();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        let seg = percent_decode(seg)?;
        if seg == "." || seg == ".." || seg.contains(['/', '\\', '\0']) {
            return None;
        }
        file.push(seg);
    }
    if file.is_dir() {
        file.push("index.html");
    }
    file.is_file().then_some(file)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Content type by extension; `application/wasm` matters (streaming compilation).
fn mime(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "md" => "text/plain; charset=utf-8",
        // .pb.gz is a gzipped protobuf the viewer decompresses itself: serve it as bytes,
        // never with Content-Encoding (the browser would unpack it behind the viewer's back).
        _ => "application/octet-stream",
    }
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    ctype: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if with_body {
        stream.write_all(body)?;
    }
    stream.flush()
}

/// `heapsnap convert [--elf ELF] SNAPSHOT -o OUT`: a snapshot to pprof, symbolized from
/// the ELF when there is one (the demo's conversion, and the peers benchmark's).
pub fn convert(heapsnap: &Path, elf: Option<&Path>, snapshot: &Path, out: &Path) -> Res {
    let mut c = Command::new(heapsnap);
    c.arg("convert");
    if let Some(elf) = elf {
        c.arg("--elf").arg(elf);
    }
    c.arg(snapshot).arg("-o").arg(out);
    tools::run(&mut c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_refuses_escapes_and_maps_directories() {
        let root = tools::root().join("xtask");
        assert_eq!(
            resolve(&root, "/src/main.rs?x=1"),
            Some(root.join("src/main.rs"))
        );
        assert_eq!(
            resolve(&root, "/src/%6Dain.rs"),
            Some(root.join("src/main.rs"))
        );
        assert_eq!(resolve(&root, "/../Cargo.toml"), None);
        assert_eq!(resolve(&root, "/src/%2e%2e/Cargo.toml"), None);
        assert_eq!(resolve(&root, "/src/..%2fCargo.toml"), None);
        assert_eq!(resolve(&root, "/missing"), None);
    }

    #[test]
    fn wasm_is_served_as_application_wasm() {
        assert_eq!(mime(Path::new("pkg/viewer_bg.wasm")), "application/wasm");
        assert_eq!(
            mime(Path::new("pkg/viewer.js")),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            mime(Path::new("demo/firmware.pb.gz")),
            "application/octet-stream"
        );
    }

    #[test]
    fn capture_link_names_the_served_files() {
        assert_eq!(
            capture_url(8787),
            "http://127.0.0.1:8787/#capture=demo/capture.cobs&elf=demo/heapsnap-firmware.elf"
        );
    }

    #[test]
    fn options_are_checked() {
        assert!(parse(&["--port".into(), "99999".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
        let o = parse(&["--no-serve".into(), "--port".into(), "9000".into()]).unwrap();
        assert!(!o.serve && o.port == Some(9000));
    }
}
