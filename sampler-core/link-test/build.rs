//! Put the target's memory map where the linker (cortex-m-rt's link.x) finds it as
//! `memory.x`: the generic Cortex-M4F part for thumbv7em (the flash and no-panic
//! builds), QEMU's lm3s6965evb for thumbv7m (the `icount` bin runs there).
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
    let src = match env::var("TARGET").as_deref() {
        Ok("thumbv7m-none-eabi") => "memory-lm3s6965.x",
        _ => "memory-m4f.x",
    };
    if let Err(e) = fs::copy(src, out.join("memory.x")) {
        println!("cargo::warning=cannot copy {src}: {e}");
    }
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory-m4f.x");
    println!("cargo:rerun-if-changed=memory-lm3s6965.x");
}
