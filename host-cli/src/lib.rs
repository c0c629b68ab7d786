//! host-cli: the host half of heapsnap — snapshots to pprof, symbolization, and the
//! profile operations (top, diff, flame tree, source lines) that both the `heapsnap`
//! binary and the browser viewer use.

pub mod analysis;
pub mod convert;
pub mod input;
pub mod inspect;
pub mod profile;
pub mod report;
#[cfg(feature = "symbolize")]
pub mod symbolize;
