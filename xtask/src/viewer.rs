//! `cargo xtask viewer`: build the Yew/WASM viewer into `www/pkg` (wasm-bindgen at the
//! exact version in Cargo.lock, then wasm-opt), printing the bundle size.

use crate::tools::Res;
use std::path::PathBuf;

pub fn run(_args: &[String]) -> Res {
    build(true).map(|_| ())
}

/// Build the bundle; returns the path of `www/`.
pub fn build(_release: bool) -> Res<PathBuf> {
    Err("viewer build not implemented yet".into())
}
