//! The host-side profile model (pprof's `profile.proto`), shared by `heapsnap` and the
//! browser viewer. Split as google/pprof's `profile/` package: model (`proto`), codec,
//! validation, operations.

pub mod proto;

pub use proto::*;
