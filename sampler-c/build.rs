//! `cfg(heapsnap_ehabi)`: the target is bare-metal Thumb-2 (Armv7-M, Armv7E-M,
//! Armv8-M mainline), where the register-saving entry points and the EHABI walker are
//! built. rustc exposes no cfg for the Thumb-2 instruction set, so it is read from the
//! target name.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(heapsnap_ehabi)");
    println!("cargo::rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let thumb2 = ["thumbv7m", "thumbv7em", "thumbv8m.main"]
        .iter()
        .any(|t| target.starts_with(t));
    if thumb2 && os == "none" {
        println!("cargo::rustc-cfg=heapsnap_ehabi");
    }
}
