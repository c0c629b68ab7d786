//! Put memory.x where the linker (cortex-m-rt's link.x) finds it.
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(e) = fs::copy("memory.x", out.join("memory.x")) {
        println!("cargo::warning=cannot copy memory.x: {e}");
    }
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
}
