//! `cargo xtask firmware-c`: the C firmware (`firmware-c/`) built with Debian's
//! `gcc-arm-none-eabi` and newlib, its every `malloc` profiled by `libsampler_c.a`
//! through `-Wl,--wrap`, run in QEMU (`lm3s6965evb`) writing snapshots over semihosting;
//! and the library's flash and RAM in the same firmware built for a Cortex-M4F
//! (thumbv7em), against a baseline with the profiler stubbed out.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::sampler::Sizes;
use crate::tools::{self, cargo, root, step, Res};

/// Debian packages: the cross compiler and the C library it links.
pub const APT: &[(&str, &str)] = &[
    ("arm-none-eabi-gcc", "gcc-arm-none-eabi"),
    ("/usr/include/newlib/stdlib.h", "libnewlib-arm-none-eabi"),
];

/// Name of the ELF next to the snapshots in [`out_dir`].
pub const ELF_NAME: &str = "firmware-c.elf";

/// The library's flash budget (as for the Rust profiler): the test command fails above.
const FLASH_TARGET: u64 = 8 * 1024;

/// What the library's panic handler calls under `panic-link-check`: never defined.
const PANIC_SYMBOL: &str = "heapsnap_c_found_a_reachable_panic";

/// Every allocator entry point newlib has, wrapped.
const WRAP: &str = "-Wl,--wrap=malloc,--wrap=free,--wrap=realloc,--wrap=calloc,\
                    --wrap=_malloc_r,--wrap=_free_r,--wrap=_realloc_r,--wrap=_calloc_r";

/// Where the run leaves the ELF, the snapshots and the console log.
pub fn out_dir() -> PathBuf {
    root().join("target/firmware-c-out")
}

pub fn run(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("`firmware-c` takes no arguments (got `{a}`)"));
    }
    let snaps = build_and_run()?;
    println!("C firmware snapshots ({}):", snaps.len());
    for s in &snaps {
        println!("  {}", s.display());
    }
    println!("C firmware ELF: {}", out_dir().join(ELF_NAME).display());
    sizes()
}

/// A device CPU: rustc target, gcc's CPU flags.
struct Cpu {
    target: &'static str,
    gcc: &'static [&'static str],
}

/// QEMU's lm3s6965evb: a Cortex-M3.
const M3: Cpu = Cpu {
    target: "thumbv7m-none-eabi",
    gcc: &["-mcpu=cortex-m3", "-mthumb"],
};

/// A Cortex-M4F, where the flash figure is taken (as for the Rust profiler).
const M4F: Cpu = Cpu {
    target: "thumbv7em-none-eabihf",
    gcc: &[
        "-mcpu=cortex-m4",
        "-mthumb",
        "-mfloat-abi=hard",
        "-mfpu=fpv4-sp-d16",
    ],
};

/// `libsampler_c.a` for `cpu` with the panic handler that cannot link: the firmware's
/// link fails if any panic path is reachable from what it calls. `inject`: with a panic
/// planted in `heapsnap_init`, built into a target directory of its own.
fn library(cpu: &Cpu, inject: bool) -> Res<PathBuf> {
    tools::ensure_targets(&[cpu.target])?;
    step(&format!(
        "libsampler_c.a for {}{}",
        cpu.target,
        if inject {
            " with an injected panic"
        } else {
            ""
        }
    ));
    let target_dir = if inject {
        root().join("target/sampler-c-inject")
    } else {
        root().join("target")
    };
    let features = if inject {
        "cortex-m,panic-link-check,inject-panic"
    } else {
        "cortex-m,panic-link-check"
    };
    tools::run(
        cargo()
            .env_remove("RUSTFLAGS")
            // `rustc --crate-type staticlib`, not `build`: the package is also an rlib
            // (for its Rust tests), and cargo runs no LTO for a crate that is an rlib
            // too; the archive would hold every crate's object unoptimized across
            // crates (18.4 KiB of flash instead of 10 at opt-level 2).
            .args([
                "rustc",
                "--quiet",
                "-p",
                "sampler-c",
                "--crate-type",
                "staticlib",
                "--target",
                cpu.target,
            ])
            .args([
                "--profile",
                "c-release",
                "--features",
                features,
                "--target-dir",
            ])
            .arg(&target_dir),
    )?;
    let lib = target_dir.join(cpu.target).join("c-release/libsampler_c.a");
    if !lib.is_file() {
        return Err(format!(
            "cargo built sampler-c but {} is missing",
            lib.display()
        ));
    }
    leave_mem_to_libc(&lib)?;
    Ok(lib)
}

/// `memcpy` and co.: Rust puts its own (weak) copies in every bare-metal staticlib, and
/// a firmware linking the library before its C library takes them over newlib's: the
/// firmware then carries both families (0.6 KB more in the demo). Localized, they are
/// never linked, and the library's calls go to the C library's, which a C firmware
/// has. The guide's build step runs the same command (docs/integrating.md, "From C").
const LOCALIZE: &[&str] = &[
    "--wildcard",
    "--localize-symbol=mem*",
    "--localize-symbol=__aeabi_mem*",
    "--localize-symbol=bcmp",
    "--localize-symbol=strlen",
];

fn leave_mem_to_libc(lib: &Path) -> Res {
    tools::run(
        Command::new("arm-none-eabi-objcopy")
            .args(LOCALIZE)
            .arg(lib),
    )
}

/// Compile and link the firmware for `cpu` into `elf`: with the library and the wraps,
/// or (`lib = None`) the baseline with `baseline.c`'s stubs. `keep_api`: every function
/// of the header is kept in the link (`--undefined`), so the no-panic check covers the
/// entry points the firmware does not call too.
fn link(cpu: &Cpu, lib: Option<&Path>, elf: &Path, keep_api: bool) -> Res {
    let src = root().join("firmware-c");
    let mut c = Command::new("arm-none-eabi-gcc");
    c.current_dir(&src)
        .args(cpu.gcc)
        // -funwind-tables: the EHABI tables the stack walker reads (8 B per function).
        .args([
            "-Os",
            "-g",
            "-funwind-tables",
            "-ffunction-sections",
            "-fdata-sections",
        ])
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I", "."])
        .arg("-I")
        .arg(root().join("sampler-c/include"))
        .args(["main.c", "startup.c"])
        .args(["-T", "lm3s6965.ld", "-nostartfiles", "--specs=nano.specs"])
        // newlib's objects lack .note.GNU-stack: nothing to warn about on an MCU.
        .args(["-Wl,--gc-sections", "-Wl,--no-warn-execstack", "-o"])
        .arg(elf);
    if keep_api {
        for f in api_functions()? {
            c.arg(format!("-Wl,--undefined={f}"));
        }
    }
    match lib {
        Some(lib) => c.arg(WRAP).arg(lib),
        None => c.arg("baseline.c"),
    };
    if let Some(dir) = elf.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    eprintln!("    $ arm-none-eabi-gcc … -o {}", elf.display());
    let out = c
        .output()
        .map_err(|e| format!("cannot start arm-none-eabi-gcc: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines() {
        eprintln!("    gcc| {line}");
    }
    if out.status.success() {
        return Ok(());
    }
    let hint = if stderr.contains(PANIC_SYMBOL) {
        " (a panic path is reachable in sampler-c)"
    } else {
        ""
    };
    Err(format!(
        "building {} failed ({}){hint}:\n{stderr}",
        elf.display(),
        out.status
    ))
}

/// Build the C firmware for QEMU, run it, return its snapshots in order.
pub fn build_and_run() -> Res<Vec<PathBuf>> {
    tools::ensure_apt(APT)?;
    crate::firmware::ensure_qemu(&crate::firmware::LM3S6965)?;
    let lib = library(&M3, false)?;
    let out = out_dir();
    step("C firmware (arm-none-eabi-gcc, newlib, --wrap=malloc…)");
    let elf = out.join(ELF_NAME);
    for old in crate::firmware::snapshots_in(&out)? {
        std::fs::remove_file(&old).map_err(|e| format!("{}: {e}", old.display()))?;
    }
    link(&M3, Some(&lib), &elf, true)?;
    no_panic_check_works(&out)?;
    step("C firmware in QEMU");
    crate::firmware::run_qemu(&crate::firmware::LM3S6965, &elf, &out)?;
    let snaps = crate::firmware::snapshots_in(&out)?;
    if snaps.len() < 2 {
        return Err(format!(
            "the C firmware wrote {} snapshot(s) into {} (expected several); see {}",
            snaps.len(),
            out.display(),
            out.join(crate::firmware::LOG_NAME).display()
        ));
    }
    Ok(snaps)
}

/// The no-panic check's self-check: the same link against a library with a panic
/// planted in `heapsnap_init` must fail, naming the panic handler's missing symbol.
fn no_panic_check_works(out: &Path) -> Res {
    let lib = library(&M3, true)?;
    step("no-panic self-check: an injected panic must fail the C firmware's link");
    let elf = out.join("inject-panic.elf");
    match link(&M3, Some(&lib), &elf, true) {
        Ok(()) => Err(format!(
            "the C firmware linked against a library with an injected panic ({}): the \
             no-panic check no longer catches panics",
            elf.display()
        )),
        Err(e) if e.contains(PANIC_SYMBOL) => {
            eprintln!("    ok: the injected panic failed the link (`{PANIC_SYMBOL}` undefined)");
            Ok(())
        }
        Err(e) => Err(format!(
            "the injected-panic link failed for another reason: {e}"
        )),
    }
}

/// The library's flash (profiled firmware minus the stubbed baseline) and RAM (the
/// profiler static against the header's formula), on a Cortex-M4F.
pub fn sizes() -> Res {
    tools::ensure_apt(APT)?;
    let lib = library(&M4F, false)?;
    let dir = root().join("target/firmware-c-sizes");
    let (profiled, baseline) = (dir.join("profiled.elf"), dir.join("baseline.elf"));
    step("C firmware for thumbv7em: with the library, and the baseline with stubs");
    link(&M4F, Some(&lib), &profiled, false)?;
    link(&M4F, None, &baseline, false)?;
    let (p, b) = (Sizes::of(&profiled)?, Sizes::of(&baseline)?);
    let flash = p.flash.saturating_sub(b.flash);
    let ram = p.ram.saturating_sub(b.ram);
    let profiler = static_size(&profiled, "sampler_c8PROFILER")?;
    let formula = formula()?;
    eprintln!(
        "    baseline C firmware (profiler stubbed): flash {:>6} B, RAM {:>6} B",
        b.flash, b.ram
    );
    eprintln!(
        "    with libsampler_c.a and --wrap:          flash {:>6} B, RAM {:>6} B",
        p.flash, p.ram
    );
    eprintln!(
        "    profiler static: {profiler} B = HEAPSNAP_TABLE_BYTES {formula} B + {} B of state",
        profiler.saturating_sub(formula)
    );
    println!("sampler-c on thumbv7em: {flash} B of flash (target {FLASH_TARGET}), {ram} B of RAM");
    if profiler < formula || profiler > formula + 256 {
        return Err(format!(
            "the C profiler static is {profiler} B, the header's formula says {formula} B + at most 256 B"
        ));
    }
    if flash > FLASH_TARGET {
        return Err(format!(
            "the C library costs {flash} B of flash, over the {FLASH_TARGET} B target"
        ));
    }
    Ok(())
}

/// Size of the static whose mangled name contains `part`.
fn static_size(elf: &Path, part: &str) -> Res<u64> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{}: {e}", elf.display()))?;
    file.symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains(part)))
        .map(|s| s.size())
        .ok_or_else(|| format!("{}: no symbol containing `{part}`", elf.display()))
}

/// The functions `heapsnap.h` declares (`… heapsnap_name(…`).
fn api_functions() -> Res<Vec<String>> {
    let h = header()?;
    let names: Vec<String> = h
        .lines()
        .filter(|l| !l.starts_with("//") && !l.starts_with(' ') && l.contains('('))
        .filter_map(|l| {
            let name = l.split('(').next()?.rsplit([' ', '*']).next()?;
            name.starts_with("heapsnap_").then(|| name.to_string())
        })
        .collect();
    if names.len() < 10 {
        return Err(format!(
            "heapsnap.h declares {} functions? ({names:?})",
            names.len()
        ));
    }
    Ok(names)
}

fn header() -> Res<String> {
    let path = root().join("sampler-c/include/heapsnap.h");
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// HEAPSNAP_TABLE_BYTES as the header states it, computed from the header's capacities.
fn formula() -> Res<u64> {
    let h = header()?;
    let cap = |name: &str| -> Res<u64> {
        h.lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("heapsnap.h: no `#define {name} <number>`"))
    };
    Ok(12 * cap("HEAPSNAP_STACKS")?
        + 4 * cap("HEAPSNAP_FRAMES")?
        + 40 * cap("HEAPSNAP_BUCKETS")?
        + 16 * cap("HEAPSNAP_LIVE")?)
}
