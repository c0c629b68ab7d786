//! `cargo xtask bench --peers [--short]`: heapsnap's host sampler against jemalloc's
//! heap profiler on the same workloads, each allocator configuration in a process of
//! its own (the `bench-peers` crate does the runs, the checks and the table).

use crate::tools::{self, cargo, step, Res};

/// Build `bench-peers` and `heapsnap` in release and run the comparison. `short`: the
/// 512 KiB configurations only, a fifth of the work, failing when heapsnap's overhead
/// exceeds jemalloc's by more than the run's noise (`--guard`).
pub fn run(short: bool) -> Res {
    step("building bench-peers (jemalloc with --enable-prof) and heapsnap (release)");
    tools::run(cargo().args([
        "build",
        "--release",
        "--locked",
        "-p",
        "bench-peers",
        "-p",
        "host-cli",
        "--bin",
        "heapsnap",
        "--bin",
        "bench-peers",
    ]))?;
    let target = crate::demo::target_dir();
    let out = target.join("bench-peers");
    let mut c = std::process::Command::new(target.join("release/bench-peers"));
    c.arg("--out")
        .arg(&out)
        .arg("--heapsnap")
        .arg(target.join("release/heapsnap"));
    if short {
        c.args(["--short", "--guard"]);
    }
    step(if short {
        "heapsnap's sampler against jemalloc's profiler (short, 512 KiB)"
    } else {
        "heapsnap's sampler against jemalloc's profiler"
    });
    tools::run(&mut c)
}
