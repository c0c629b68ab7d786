//! Device-side checks of sampler-core (the bounded fuzz runs are in `fuzz.rs`).

use std::path::Path;
use std::process::Command;

use object::{Object, ObjectSection, ObjectSymbol, SectionKind};

use crate::icount;
use crate::tools::{self, cargo, root, step, Res};

/// Device targets sampler-core must build for without `alloc` (thumbv6m: no CAS).
const DEVICE_TARGETS: &[&str] = &[
    "thumbv6m-none-eabi",
    "thumbv7em-none-eabihf",
    "riscv32imac-unknown-none-elf",
];

/// Flash budget of the profiler in a minimal thumbv7em firmware (issue 2).
const FLASH_TARGET: u64 = 8 * 1024;

/// Symbol the link test's panic handler calls; it must never be defined.
const PANIC_SYMBOL: &str = "heapsnap_link_test_found_a_reachable_panic";

/// sampler-core for thumbv6m / thumbv7em / riscv32 without alloc, the no-panic link
/// test, the flash size of a minimal ProfiledAlloc binary, and the instructions its
/// not-sampled path adds, executed on an emulated Cortex-M3.
pub fn device_checks() -> Res {
    tools::ensure_targets(DEVICE_TARGETS)?;
    // 1. The library for every device target, no features: no std, no alloc. The
    //    32-bit table sizes (40 B per bucket, 12 B per stack) are `const` asserts
    //    that these builds evaluate.
    for t in DEVICE_TARGETS {
        step(&format!("sampler-core for {t} (no_std, no alloc)"));
        tools::run(cargo().args([
            "build",
            "--quiet",
            "-p",
            "sampler-core",
            "--lib",
            "--target",
            t,
        ]))?;
        // With the integration features a firmware would enable on that target.
        let features = if t.starts_with("thumb") {
            "cortex-m,defmt"
        } else {
            "riscv-rt,defmt"
        };
        tools::run(cargo().args([
            "build",
            "--quiet",
            "-p",
            "sampler-core",
            "--lib",
            "--target",
            t,
            "--features",
            features,
        ]))?;
    }
    // 2. The link test: release + LTO, panic handler that cannot link.
    let dir = root().join("sampler-core/link-test");
    let target_dir = root().join("target/link-test");
    let link = |extra: &[&str]| -> Command {
        // Its own workspace and .cargo/config.toml (target, rustflags): run from there.
        let mut c = cargo();
        c.current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target_dir)
            .env_remove("RUSTFLAGS");
        c.args(["build", "--release", "--quiet", "--locked"])
            .args(extra);
        c
    };
    step("link test: record_alloc/record_free/ProfiledAlloc/snapshot with an unlinkable panic handler");
    tools::run(&mut link(&[]))?;
    step("link test self-check: an injected panic must fail the link");
    let out = link(&["--bin", "profiled", "--features", "inject-panic"])
        .output()
        .map_err(|e| format!("cannot start cargo for the link test: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || !stderr.contains(PANIC_SYMBOL) {
        return Err(format!(
            "the link test no longer catches panics: a build with an injected panic {} \
             (expected a link error naming `{PANIC_SYMBOL}`)\n{stderr}",
            if out.status.success() {
                "linked"
            } else {
                "failed for another reason"
            }
        ));
    }
    eprintln!("    ok: the injected panic failed the link (`{PANIC_SYMBOL}` undefined)");
    // 3. Flash and RAM, from the ELF files.
    let bin = target_dir.join("thumbv7em-none-eabihf/release");
    let base = Sizes::of(&bin.join("baseline"))?;
    let prof = Sizes::of(&bin.join("profiled"))?;
    let delta = prof.flash.saturating_sub(base.flash);
    eprintln!(
        "    baseline firmware (bump allocator):     flash {:>6} B, RAM {:>6} B",
        base.flash, base.ram
    );
    eprintln!(
        "    same firmware with ProfiledAlloc:       flash {:>6} B, RAM {:>6} B",
        prof.flash, prof.ram
    );
    eprintln!(
        "    profiler flash cost (incl. snapshot encoder): {delta} B (target <= {FLASH_TARGET} B)"
    );
    for (name, size) in &prof.statics {
        eprintln!("    static {name}: {size} B of RAM");
    }
    // The README's RAM formula against the real static: `profiled`'s HEAP holds the
    // 16 KiB + 4 B bump heap and a Profiler<S=64, F=1024, B=128, L=128>.
    let formula = 40 * 128 + 12 * 64 + 4 * 1024 + 16 * 128;
    let heap = prof
        .statics
        .iter()
        .find(|(n, _)| n.ends_with("::HEAP"))
        .map(|s| s.1)
        .ok_or("no HEAP symbol in the link test")?;
    let profiler = heap.saturating_sub(16 * 1024 + 4);
    eprintln!("    profiler tables: {profiler} B = formula 40·B + 12·S + 4·F + 16·L = {formula} B + {} B fixed", profiler.saturating_sub(formula));
    if profiler < formula || profiler > formula + 256 {
        return Err(format!("the profiler static is {profiler} B, the README formula says {formula} B + at most 256 B"));
    }
    println!("sampler-core flash: {delta} bytes for ProfiledAlloc + record/free + snapshot on thumbv7em (target {FLASH_TARGET})");
    if delta > FLASH_TARGET {
        return Err(format!(
            "the profiler costs {delta} B of flash, over the {FLASH_TARGET} B target"
        ));
    }
    // 4. Instructions executed on the fast path, on an emulated Cortex-M3.
    step("instructions ProfiledAlloc adds on thumbv7m: the `icount` bin in QEMU lm3s6965evb, one instruction per TB");
    tools::ensure_targets(&[ICOUNT_TARGET])?;
    tools::run(&mut link(&["--target", ICOUNT_TARGET, "--bin", "icount"]))?;
    let elf = target_dir.join(ICOUNT_TARGET).join("release/icount");
    let c = icount::measure(&elf, &target_dir.join("icount"))?;
    fast_path_report(&c)
}

/// The Cortex-M3 target the instruction counts are measured on (QEMU's lm3s6965evb).
const ICOUNT_TARGET: &str = "thumbv7m-none-eabi";

/// Print the instruction counts; fail when they are not sane or over budget.
fn fast_path_report(c: &icount::Counts) -> Res {
    use icount::{range, show, ALLOC_BUDGET, FREE_BUDGET};
    let (alloc_adds, free_adds) = (c.alloc_adds(), c.free_adds());
    eprintln!(
        "    instructions executed (net of the {} of the marker calls; 16-byte blocks):",
        c.glue
    );
    eprintln!(
        "      alloc: Bump {:>4}, ProfiledAlloc<Bump> not sampled {:>4}, sampled at rate 1 {:>4}",
        show(&c.inner_alloc),
        show(&c.profiled_alloc),
        c.sampled_alloc
    );
    eprintln!(
        "      free:  Bump {:>4}, ProfiledAlloc<Bump> unsampled object {:>4}, sampled object {:>4}",
        show(&c.inner_free),
        show(&c.profiled_free),
        c.sampled_free
    );
    println!(
        "sampler-core fast path: ProfiledAlloc adds {} instructions to a not-sampled alloc, {} to a free of an unsampled object on thumbv7m (budget {ALLOC_BUDGET} / {FREE_BUDGET})",
        show(&alloc_adds),
        show(&free_adds)
    );
    let ((a_min, a_max), (f_min, f_max)) = (range(&alloc_adds), range(&free_adds));
    let (p_max, pf_max) = (range(&c.profiled_alloc).1, range(&c.profiled_free).1);
    if a_min <= 0 || f_min <= 0 || range(&c.inner_alloc).0 <= 0 {
        return Err(format!(
            "implausible instruction counts (ProfiledAlloc adds {} / {}, Bump's alloc {}): \
             the profiler's fast path cannot be free and the inner allocator cannot be empty",
            show(&alloc_adds),
            show(&free_adds),
            show(&c.inner_alloc)
        ));
    }
    if c.sampled_alloc <= p_max || c.sampled_free <= pf_max {
        return Err(format!(
            "a sampled allocation ({}) and its free ({}) should cost more than the \
             not-sampled ones ({p_max}, {pf_max}): the measured segments are not what they claim",
            c.sampled_alloc, c.sampled_free
        ));
    }
    if a_max > ALLOC_BUDGET || f_max > FREE_BUDGET {
        return Err(format!(
            "ProfiledAlloc's not-sampled path costs {a_max} instructions per alloc and \
             {f_max} per free over the inner allocator, over the budget of \
             {ALLOC_BUDGET} / {FREE_BUDGET} (xtask/src/icount.rs)"
        ));
    }
    Ok(())
}

/// Flash (allocated, file-backed sections: code, read-only data, .data's load image)
/// and RAM (.data + .bss) of a firmware ELF, plus the profiler statics' sizes.
pub struct Sizes {
    pub flash: u64,
    pub ram: u64,
    statics: Vec<(String, u64)>,
}

impl Sizes {
    pub fn of(path: &Path) -> Res<Sizes> {
        let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = object::File::parse(&*data)
            .map_err(|e| format!("{}: not an ELF file: {e}", path.display()))?;
        let (mut flash, mut ram) = (0, 0);
        for s in file.sections() {
            // Not loaded (debug info, comments): no SHF_ALLOC. (Not "address 0": a C
            // firmware's .text starts at 0 on many MCUs.)
            let alloc = match s.flags() {
                object::SectionFlags::Elf { sh_flags, .. } => {
                    sh_flags.0 & object::elf::SHF_ALLOC.0 != 0
                }
                _ => s.address() != 0,
            };
            if !alloc {
                continue;
            }
            match s.kind() {
                SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => {
                    flash += s.size()
                }
                SectionKind::Data => {
                    flash += s.size();
                    ram += s.size();
                }
                SectionKind::UninitializedData => ram += s.size(),
                // Other loaded sections (the unwind index .ARM.exidx, notes): flash.
                _ => flash += s.size(),
            }
        }
        let statics = file
            .symbols()
            .filter_map(|sym| {
                let name = sym.name().ok()?;
                (name.contains("HEAP") || name.contains("POOL_PROFILER"))
                    .then(|| (short(name), sym.size()))
            })
            .filter(|(_, size)| *size > 0)
            .collect();
        Ok(Sizes {
            flash,
            ram,
            statics,
        })
    }
}

/// `_ZN8profiled4HEAP17h…E` → `profiled::HEAP`.
fn short(mangled: &str) -> String {
    let Some(mut rest) = mangled.strip_prefix("_ZN") else {
        return mangled.to_string();
    };
    let mut parts = Vec::new();
    while let Some(n) = rest.find(|c: char| !c.is_ascii_digit()).filter(|&n| n > 0) {
        let Ok(len) = rest[..n].parse::<usize>() else {
            break;
        };
        let Some(part) = rest.get(n..n + len) else {
            break;
        };
        if !part.starts_with('h') || part.len() != 17 {
            parts.push(part.to_string());
        }
        rest = &rest[n + len..];
    }
    parts.join("::")
}
