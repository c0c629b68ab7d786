//! `cargo xtask demo`: the main job end to end.

use crate::tools::Res;

pub fn run(_args: &[String]) -> Res {
    Err("demo not implemented yet".into())
}
