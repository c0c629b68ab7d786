//! What the memory-bounded CLI tests (`hostile.rs`, `timeline_stream.rs`) share: the
//! binary run under an address-space limit.

use std::process::Output;

/// Address space the binary may use (`ulimit -v`): its own mapping and the decoders'
/// budgets fit; an amplified decode or a capture held whole does not.
#[allow(dead_code)] // not every test file that shares this module uses it
pub const MEMORY_KIB: u64 = 512 << 10;

/// Runs heapsnap with `args` under [`MEMORY_KIB`].
pub fn heapsnap(args: &[&str]) -> Output {
    heapsnap_within(MEMORY_KIB >> 10, args)
}

/// Runs heapsnap with `args` under an address-space limit of `mib` MiB.
#[allow(dead_code)] // not every test file that shares this module uses it
pub fn heapsnap_within(mib: u64, args: &[&str]) -> Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib << 10))
        .arg(env!("CARGO_BIN_EXE_heapsnap"))
        .args(args)
        .output()
        .unwrap()
}
