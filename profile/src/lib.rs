//! heapsnap's profile library: everything between a file and the numbers a user reads,
//! shared by the `heapsnap` CLI and the browser viewer.
//!
//! The chain, as google/pprof's `profile/` package splits it:
//!
//! - [`profile`]: the model (pprof's `profile.proto`), its codec, and the operations
//!   on it (build, merge, diff, validate).
//! - [`import`]: one file per input format, each with a `sniff` and a reader, and one
//!   [`import::guess`] that tries them in order (inferno's `guess.rs`). A new input
//!   format is a file there; the CLI and the viewer both read through `guess`.
//! - [`export`]: the output formats besides pprof itself (folded stacks, legacy heap
//!   text).
//! - [`analysis`]: what `go tool pprof` prints (top), the flame tree, per-line source
//!   values, focus/ignore filters, unit formatting.
//!
//! No ELF, file system or platform code lives here: symbolization is the
//! `heapsnap-symbolize` crate, passed in through [`import::Symbols`].
//!
//! ## Size notes (the browser viewer links this crate)
//!
//! The viewer's wasm bundle has a budget (`cargo xtask test` enforces it), so a few
//! choices here favour code size over convenience, said once instead of at each site:
//! every sort goes through one non-generic [`sorted_order`] (each `sort_by` call site
//! is its own copy of the standard sort); maps share one key/value type where they
//! can (`FxHashMap<u64, u64>`-shaped) so their code is emitted once; number formatting
//! is integer-only (no float formatting code); user-facing messages are spelled out,
//! not `{:?}` (release wasm compiles `Debug` out); and per-sample helpers are kept
//! out of line where V8 would otherwise deoptimize a large function mid-profile. The
//! decoder's hot loop lives in `pprof-scan`, built at opt-level 3 in the otherwise
//! size-optimized bundle.

pub mod analysis;
#[cfg(not(target_arch = "wasm32"))]
mod beside;
pub mod export;
pub mod import;
#[cfg(feature = "snapshot")]
pub mod leaks;
pub mod limits;
mod order;
pub mod profile;
pub mod text;

pub use order::{permute, sorted_order};
