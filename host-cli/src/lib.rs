//! host-cli: the `heapsnap` command line over heapsnap-profile and heapsnap-symbolize.
//! The library part is what the binary prints and how `pull` talks to a target (kept
//! here so tests can call it).

pub mod gdb;
pub mod pull;
pub mod report;
