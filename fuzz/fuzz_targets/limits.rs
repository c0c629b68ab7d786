//! The limits every pprof/import target decodes with (a module of each target, not a
//! target itself).

use heapsnap_profile::limits::Limits;

/// Tight limits for fuzz-sized inputs: with `-malloc_limit_mb=64` any decode that
/// grows past its entry budget (the inflate cap included) is a reported crash.
pub fn limits() -> Limits {
    Limits {
        inflated_size: 8 << 20,
        entries_base: 1 << 16,
        ..Limits::default()
    }
}
