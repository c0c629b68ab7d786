//! Firmware (thumbv7m, QEMU lm3s6965evb) and device-side checks of sampler-core.

use crate::tools::{self, Res};
use std::path::PathBuf;

pub fn run(_args: &[String]) -> Res {
    build_and_run().map(|_| ())
}

/// Where the firmware run writes its snapshots and ELF copy.
pub fn out_dir() -> PathBuf {
    tools::root().join("target/firmware-out")
}

/// Build the firmware, run it in QEMU, return the snapshot paths in order.
pub fn build_and_run() -> Res<Vec<PathBuf>> {
    Err("firmware run not implemented yet".into())
}
