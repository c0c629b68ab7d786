//! `cargo xtask firmware`: build the Cortex-M3 firmware (`firmware/`, its own workspace,
//! target thumbv7m-none-eabi), run it in QEMU (`lm3s6965evb`) and collect the snapshots
//! it writes over semihosting, plus a copy of the ELF that symbolizes them.
//! `cargo xtask firmware --riscv` does the same for the RISC-V firmware
//! (`firmware-riscv/`, riscv32imac on QEMU `virt`, sampler-core's `riscv-rt` feature).

use crate::tools::{self, Res};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The firmware's target (QEMU's lm3s6965evb is a Cortex-M3).
pub const TARGET: &str = "thumbv7m-none-eabi";
/// QEMU is killed after this long; the firmware normally finishes in a few seconds.
const QEMU_TIMEOUT: Duration = Duration::from_secs(60);
/// Name of the ELF copy in [`out_dir`].
pub const ELF_NAME: &str = "heapsnap-firmware.elf";
/// Name of the QEMU console log in [`out_dir`].
pub const LOG_NAME: &str = "qemu.log";

/// A QEMU machine a firmware runs on: the emulator, its arguments before `-kernel`,
/// and the Debian package that provides it.
pub struct Machine {
    /// The emulator binary.
    pub qemu: &'static str,
    /// Its arguments before `-kernel ELF` (machine, console, semihosting).
    pub args: &'static [&'static str],
    /// The Debian package to install it from.
    pub apt: &'static str,
    /// Name of the ELF copy next to the snapshots.
    pub elf_name: &'static str,
    /// Where the firmware's UART goes (`-serial file:NAME`, in the run's folder): the
    /// COBS capture of the snapshots it streams. `None`: QEMU's default console.
    pub serial_capture: Option<&'static str>,
}

/// Name of the UART capture in [`out_dir`]: the COBS-framed snapshots the firmware
/// streams over UART0 (`heapsnap timeline`, the viewer's `#capture=`).
pub const CAPTURE_NAME: &str = "capture.cobs";

/// QEMU's arguments for the Cortex-M3 board (machine, console, semihosting), then
/// `$extra` (the instruction count's logging, xtask/src/icount.rs); `semihosting: S`
/// first replaces the semihosting configuration (the leak-check run's command line).
macro_rules! lm3s6965_args {
    (semihosting: $config:expr $(, $extra:expr)*) => {
        &[
            "-cpu",
            "cortex-m3",
            "-machine",
            "lm3s6965evb",
            "-nographic",
            "-semihosting-config",
            $config,
            $($extra),*
        ]
    };
    ($($extra:expr),*) => {
        $crate::firmware::lm3s6965_args!(semihosting: "enable=on,target=native" $(, $extra)*)
    };
}
pub(crate) use lm3s6965_args;

/// The Cortex-M3 demo firmware's machine.
pub const LM3S6965: Machine = Machine {
    qemu: "qemu-system-arm",
    args: lm3s6965_args!(),
    apt: "qemu-system-arm",
    elf_name: ELF_NAME,
    serial_capture: Some(CAPTURE_NAME),
};

/// The RISC-V firmware's machine: QEMU `virt` with no firmware of its own (`-bios
/// none`: the reset ROM jumps to DRAM at 0x80000000, where riscv-rt's `_start` is).
pub const RISCV_VIRT: Machine = Machine {
    qemu: "qemu-system-riscv32",
    args: &[
        "-machine",
        "virt",
        "-bios",
        "none",
        "-nographic",
        "-semihosting-config",
        "enable=on,target=native",
    ],
    apt: "qemu-system-misc",
    elf_name: RISCV_ELF_NAME,
    serial_capture: None,
};

/// The RISC-V firmware's target.
pub const RISCV_TARGET: &str = "riscv32imac-unknown-none-elf";
/// Name of the RISC-V ELF copy in [`riscv_out_dir`].
pub const RISCV_ELF_NAME: &str = "heapsnap-firmware-riscv.elf";

pub fn run(args: &[String]) -> Res {
    match args.first().map(String::as_str) {
        None => {}
        Some("--matrix") if args.len() == 1 => {
            for out in build_and_run_matrix()? {
                println!("{}", out.display());
            }
            return Ok(());
        }
        Some("--riscv") if args.len() == 1 => {
            for s in build_and_run_riscv()? {
                println!("{}", s.display());
            }
            return Ok(());
        }
        Some(a) => {
            return Err(format!(
                "`firmware` takes only `--matrix` or `--riscv` (got `{a}`)"
            ))
        }
    }
    let snaps = build_and_run()?;
    println!("firmware snapshots ({}):", snaps.len());
    for s in &snaps {
        println!("  {}", s.display());
    }
    println!("firmware ELF: {}", elf_path().display());
    println!("firmware UART capture: {}", capture_path().display());
    Ok(())
}

/// The UART capture of the demo run (see [`CAPTURE_NAME`]).
pub fn capture_path() -> PathBuf {
    out_dir().join(CAPTURE_NAME)
}

/// Where the firmware run writes its snapshots, its console log and the ELF copy.
pub fn out_dir() -> PathBuf {
    tools::root().join("target/firmware-out")
}

/// The ELF copied next to the snapshots (symbols and DWARF for `heapsnap convert --elf`).
pub fn elf_path() -> PathBuf {
    out_dir().join(ELF_NAME)
}

/// Is `machine`'s QEMU usable here (installed, or installable with apt)? `Err` says why not.
pub fn ensure_qemu(machine: &Machine) -> Res {
    tools::ensure_apt(&[(machine.qemu, machine.apt)])
}

/// Build the firmware, run it in QEMU, return the snapshot paths in order.
pub fn build_and_run() -> Res<Vec<PathBuf>> {
    tools::ensure_targets(&[TARGET])?;
    ensure_qemu(&LM3S6965)?;
    let elf = build("firmware", TARGET, "heapsnap-firmware")?;
    let snaps = run_into(&elf, &out_dir())?;
    run_leak_check(&elf)?;
    Ok(snaps)
}

/// The demo machine with the semihosting command line `firmware leaks`: the firmware's
/// leak-check run (sample rate 1, the object table and the RAM at the end).
pub const LM3S6965_LEAKS: Machine = Machine {
    args: lm3s6965_args!(semihosting: "enable=on,target=native,arg=firmware,arg=leaks"),
    // The leak-check run streams nothing.
    serial_capture: None,
    ..LM3S6965
};

/// Where the leak-check run writes `leaks-snap.bin`, `leaks-ram.bin` and its console
/// log (`qemu.log`, with the firmware's own `lost: N blocks, B bytes`).
pub fn leaks_out_dir() -> PathBuf {
    out_dir().join("leaks")
}

/// Run the firmware's leak-check mode into [`leaks_out_dir`]; checks that it wrote
/// the snapshot and the RAM image.
pub fn run_leak_check(elf: &Path) -> Res {
    let out = leaks_out_dir();
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    for name in LEAK_FILES {
        let _ = std::fs::remove_file(out.join(name));
    }
    eprintln!("    leak-check run (rate 1, object table, RAM image):");
    run_qemu(&LM3S6965_LEAKS, elf, &out)?;
    for name in LEAK_FILES {
        if !out.join(name).is_file() {
            return Err(format!(
                "the leak-check run wrote no {name} into {}; see {}",
                out.display(),
                out.join(LOG_NAME).display()
            ));
        }
    }
    Ok(())
}

/// What the leak-check run writes.
pub const LEAK_FILES: [&str; 3] = ["leaks-snap.bin", "leaks-ram.bin", "leaks-regs.txt"];

/// Where the RISC-V firmware's run goes (laid out like [`out_dir`]); the e2e tests find
/// it under `HEAPSNAP_FIRMWARE_OUT`.
pub fn riscv_out_dir() -> PathBuf {
    out_dir().join("riscv32")
}

/// Build the RISC-V firmware (`firmware-riscv/`), run it in QEMU `virt`, return the
/// snapshot paths in order.
pub fn build_and_run_riscv() -> Res<Vec<PathBuf>> {
    tools::ensure_targets(&[RISCV_TARGET])?;
    ensure_qemu(&RISCV_VIRT)?;
    let elf = build("firmware-riscv", RISCV_TARGET, "heapsnap-firmware-riscv")?;
    run_on(&RISCV_VIRT, &elf, &riscv_out_dir())
}

/// Copy `elf` into `out` (as [`ELF_NAME`]), run it in QEMU there with the old snapshots
/// removed, and return the new ones in order.
pub fn run_into(elf: &Path, out: &Path) -> Res<Vec<PathBuf>> {
    run_on(&LM3S6965, elf, out)
}

/// [`run_into`] on any [`Machine`].
pub fn run_on(machine: &Machine, elf: &Path, out: &Path) -> Res<Vec<PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for old in snapshots_in(out)? {
        std::fs::remove_file(&old).map_err(|e| format!("{}: {e}", old.display()))?;
    }
    let copy = out.join(machine.elf_name);
    std::fs::copy(elf, &copy)
        .map_err(|e| format!("copying {} to {}: {e}", elf.display(), copy.display()))?;
    if let Some(name) = machine.serial_capture {
        let _ = std::fs::remove_file(out.join(name));
    }
    run_qemu(machine, &copy, out)?;
    if let Some(name) = machine.serial_capture {
        let cap = out.join(name);
        let len = std::fs::metadata(&cap).map(|m| m.len()).unwrap_or(0);
        if len == 0 {
            return Err(format!(
                "the firmware streamed nothing over its UART into {}; see {}",
                cap.display(),
                out.join(LOG_NAME).display()
            ));
        }
        eprintln!("    UART capture: {} ({len} bytes)", cap.display());
    }
    let snaps = snapshots_in(out)?;
    if snaps.len() < 2 {
        return Err(format!(
            "the firmware wrote {} snapshot(s) into {} (expected several); see {}",
            snaps.len(),
            out.display(),
            out.join(LOG_NAME).display()
        ));
    }
    Ok(snaps)
}

/// Optimization levels of the opt-level matrix: every level cargo accepts.
pub const MATRIX_OPT_LEVELS: &[&str] = &["0", "1", "2", "3", "s", "z"];

/// Where the matrix's runs go: one folder per build, `o{level}-{lto|nolto}`, each laid
/// out like [`out_dir`] (ELF, snapshots, console log).
pub fn matrix_out_dir() -> PathBuf {
    out_dir().join("matrix")
}

/// The opt-level matrix: the same firmware source built at every opt-level, with and
/// without fat LTO, each run in QEMU. Proves the profiler's frames are skipped by
/// something that survives inlining (the demo build alone, at one level, cannot).
///
/// Two cargo invocations build all twelve: a generated workspace under
/// `target/fw-matrix` holds one package per opt-level, all pointing at
/// `firmware/src/main.rs` and its dependencies, with the level set per package
/// (`[profile.*.package.NAME]`); LTO is a profile setting, so it is the second build.
pub fn build_and_run_matrix() -> Res<Vec<PathBuf>> {
    tools::ensure_targets(&[TARGET])?;
    ensure_qemu(&LM3S6965)?;
    let ws = matrix_workspace()?;
    let target_dir = ws.join("target");
    let mut outs = Vec::new();
    for (profile, lto) in [("release", "nolto"), ("release-lto", "lto")] {
        let mut c = firmware_cargo(&ws);
        c.args(["build", "--workspace", "--profile", profile, "--target-dir"])
            .arg(&target_dir);
        tools::run(&mut c)?;
        for level in MATRIX_OPT_LEVELS {
            let elf = target_dir
                .join(TARGET)
                .join(profile)
                .join(matrix_package(level));
            let out = matrix_out_dir().join(format!("o{level}-{lto}"));
            eprintln!("    opt-level {level}, {lto}:");
            run_into(&elf, &out)?;
            outs.push(out);
        }
    }
    Ok(outs)
}

/// Package (and binary) name of the matrix build at `level`.
fn matrix_package(level: &str) -> String {
    format!("fw-o{level}")
}

/// Write the matrix workspace (see [`build_and_run_matrix`]); returns its root. The
/// member manifests take `firmware/Cargo.toml`'s `[dependencies]` as they are, and the
/// firmware's lock file and `.cargo/config.toml` (target, frame pointers, linker
/// script) are copied, so the matrix builds what the demo builds, at other levels.
fn matrix_workspace() -> Res<PathBuf> {
    let fw = tools::root().join("firmware");
    let ws = tools::root().join("target/fw-matrix");
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let write = tools::write_if_changed;
    let manifest = read(&fw.join("Cargo.toml"))?;
    let deps = manifest
        .split_once("\n[dependencies]\n")
        .map(|(_, rest)| rest.split("\n[").next().unwrap_or(rest))
        .ok_or("firmware/Cargo.toml has no [dependencies] table")?
        .replace(
            "path = \"../sampler-core\"",
            &format!("path = {:?}", tools::root().join("sampler-core")),
        );
    let mut root = String::from(
        "# Generated by `cargo xtask` (firmware.rs, matrix_workspace): do not edit.\n\
         [workspace]\nresolver = \"2\"\nmembers = [",
    );
    let mut profiles = String::from(
        "\n# Cargo's release defaults, plus the debug info `heapsnap --elf` needs.\n\
         [profile.release]\ndebug = true\n\n\
         [profile.release-lto]\ninherits = \"release\"\nlto = true\n",
    );
    for level in MATRIX_OPT_LEVELS {
        let name = matrix_package(level);
        root.push_str(&format!("{name:?}, "));
        let value = if level.parse::<u8>().is_ok() {
            level.to_string()
        } else {
            format!("{level:?}")
        };
        for profile in ["release", "release-lto"] {
            profiles.push_str(&format!(
                "\n[profile.{profile}.package.{name}]\nopt-level = {value}\n"
            ));
        }
        let member = format!(
            "[package]\nname = {name:?}\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             publish = false\nbuild = {build:?}\n\n\
             [[bin]]\nname = {name:?}\npath = {main:?}\ntest = false\nbench = false\n\n\
             [dependencies]\n{deps}",
            build = fw.join("build.rs"),
            main = fw.join("src/main.rs"),
        );
        write(&ws.join(&name).join("Cargo.toml"), &member)?;
    }
    root.push_str("]\n");
    root.push_str(&profiles);
    write(&ws.join("Cargo.toml"), &root)?;
    write(
        &ws.join(".cargo/config.toml"),
        &read(&fw.join(".cargo/config.toml"))?,
    )?;
    seed_lock(&ws)?;
    Ok(ws)
}

/// The firmware's lock file as the seed of a generated crate's (`dir`), so it builds
/// with the versions the demo is tested with (cargo adds what it needs beyond them).
pub fn seed_lock(dir: &Path) -> Res {
    let lock = dir.join("Cargo.lock");
    if lock.is_file() {
        return Ok(());
    }
    let seed = tools::root().join("firmware/Cargo.lock");
    std::fs::copy(&seed, &lock)
        .map(drop)
        .map_err(|e| format!("copying {} to {}: {e}", seed.display(), lock.display()))
}

/// `cargo` in a firmware workspace `dir`, so its `.cargo/config.toml` applies.
pub fn firmware_cargo(dir: &Path) -> Command {
    let mut c = tools::cargo();
    c.current_dir(dir)
        // Flags from the environment would replace the config's rustflags and drop the
        // frame pointers the stack walker needs.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    c
}

/// `cargo build --release` inside the firmware crate `crate_dir` (`firmware`,
/// `firmware-riscv`), so its `.cargo/config.toml` (target, frame pointers, linker
/// script) applies. Returns the path of the ELF `bin` built for `target`.
fn build(crate_dir: &str, target: &str, bin: &str) -> Res<PathBuf> {
    let dir = tools::root().join(crate_dir);
    let target_dir = dir.join("target");
    let mut c = firmware_cargo(&dir);
    // Not `--locked`: when sampler-core gains a dependency, cargo adds it to the
    // committed firmware/Cargo.lock (pinned versions stay) instead of failing.
    c.args(["build", "--release", "--target-dir"])
        .arg(&target_dir);
    tools::run(&mut c)?;
    let elf = target_dir.join(target).join("release").join(bin);
    if !elf.is_file() {
        return Err(format!(
            "cargo built the firmware but {} is missing",
            elf.display()
        ));
    }
    Ok(elf)
}

/// Run the ELF in QEMU with `cwd` as working directory (semihosting file names are
/// relative to it); echo and log its console; kill it after [`QEMU_TIMEOUT`].
pub fn run_qemu(machine: &Machine, elf: &Path, cwd: &Path) -> Res {
    let qemu = machine.qemu;
    let log_path = cwd.join(LOG_NAME);
    let mut log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut c = Command::new(qemu);
    c.args(machine.args);
    if let Some(name) = machine.serial_capture {
        // Relative to the working directory, like the semihosting files. With the
        // UART in a file, `-nographic` would give stdio to the monitor, whose prompt
        // then prefixes the console log's lines: no monitor.
        c.arg("-serial")
            .arg(format!("file:{name}"))
            .args(["-monitor", "none"]);
    }
    c.arg("-kernel")
        .arg(elf)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    eprintln!(
        "    $ (cd {} && {qemu} … -kernel {})",
        cwd.display(),
        elf.display()
    );
    let mut child = c.spawn().map_err(|e| format!("cannot start {qemu}: {e}"))?;
    // Echo the console as it comes (stdout and stderr merged into the log in order of arrival).
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let mut readers = Vec::new();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let started = Instant::now();
    let status = loop {
        while let Ok(line) = rx.try_recv() {
            eprintln!("    qemu| {line}");
            let _ = writeln!(log, "{line}");
        }
        match child
            .try_wait()
            .map_err(|e| format!("waiting for {qemu}: {e}"))?
        {
            Some(status) => break status,
            None if started.elapsed() > QEMU_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "QEMU did not exit within {} s (killed); the firmware hung or never reached \
                     its semihosting exit; console log: {}",
                    QEMU_TIMEOUT.as_secs(),
                    log_path.display()
                ));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    for r in readers {
        let _ = r.join();
    }
    for line in rx.try_iter() {
        eprintln!("    qemu| {line}");
        let _ = writeln!(log, "{line}");
    }
    if !status.success() {
        return Err(format!(
            "the firmware failed in QEMU ({status}); console log: {}",
            log_path.display()
        ));
    }
    eprintln!(
        "    firmware finished in QEMU in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `snap-*.bin` in `dir`, sorted by name (= by time of writing).
pub fn snapshots_in(dir: &Path) -> Res<Vec<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut snaps: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("snap-") && n.ends_with(".bin"))
        })
        .collect();
    snaps.sort();
    Ok(snaps)
}
