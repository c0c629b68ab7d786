//! Task runner: `cargo xtask <task>` (the Rust habit of defmt and rust-analyzer).
//!
//! Two commands matter to a newcomer: `cargo xtask demo` (the main job, end to end)
//! and `cargo xtask test` (every test; `.ci/run` calls it). Both install what they need
//! when it is missing, so a fresh machine of this kind needs nothing else.

mod demo;
mod firmware;
mod firmware_c;
mod fuzz;
mod guide;
mod icount;
mod peers;
mod sampler;
mod test;
mod tools;
mod viewer;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  demo [--no-serve] [--port N] [--host | --c]
                                 build, profile firmware in QEMU (--host: a host program;
                                 --c: the C firmware, gcc + newlib + libsampler_c.a),
                                 convert, serve the viewer with the profile preloaded
  test                           run every test (what CI runs)
  viewer [--dev]                 build the browser viewer into www/pkg
  bench-viewer [--peers [--short] | --series]
                                 time file → first flame paint and memory in headless Chromium
                                 (--peers: against the floor, speedscope and go tool pprof,
                                 one table; --short: the test command's guard)
  firmware [--matrix|--riscv]    build and run the QEMU firmware, writing snapshots
                                 (--matrix: at every opt-level, with and without LTO;
                                 --riscv: the riscv-rt firmware in QEMU virt)
  firmware-c                     build the C firmware (gcc, newlib, libsampler_c.a via --wrap),
                                 run it in QEMU writing snapshots; the C library's flash/RAM
  guide                          compile every code block of docs/integrating.md and README.md;
                                 build the guide's firmware at default release, run it in QEMU
  bench [--peers [--short]]      run the criterion benchmarks and print their figures
                                 (--peers: heapsnap's sampler against jemalloc's profiler on
                                 the same workloads, one table; --short: 512 KiB only, quick)
  device                         sampler-core device builds, no-panic link test, flash size,
                                 instructions the not-sampled path adds (QEMU Cortex-M3)
  check                          rustfmt, clippy (warnings denied), viewer/device feature builds
  fuzz [--seconds N]             run every cargo-fuzz target briefly (as `test` does),
                                 or N seconds each (the long runs are by hand)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match task.as_str() {
        "demo" => demo::run(rest),
        "test" => test::run(rest),
        "viewer" => viewer::run(rest),
        "bench-viewer" => viewer::bench(rest),
        "firmware" => firmware::run(rest),
        "firmware-c" => firmware_c::run(rest),
        "bench" => test::bench(rest),
        "guide" => match rest.first() {
            None => guide::build_and_run().map(|out| println!("{}", out.display())),
            Some(a) => Err(format!("`guide` takes no arguments (got `{a}`)")),
        },
        "device" => sampler::device_checks(),
        "check" => test::checks(),
        "fuzz" => fuzz::run(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(format!("unknown task `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: error: {e}");
            ExitCode::FAILURE
        }
    }
}
