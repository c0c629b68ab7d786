//! Exporters: the output formats besides pprof itself ([`crate::profile::encode`]),
//! one file per format (inferno's `collapse/*` layout, the other way round).

mod folded;
#[cfg(feature = "snapshot")]
mod legacy;

pub use folded::folded;
#[cfg(feature = "snapshot")]
pub use legacy::legacy_text;
