//! host-cli: the `heapsnap` command line over heapsnap-profile and heapsnap-symbolize.
//! The library part is what the binary prints, the files it reads and writes beyond
//! its inputs, and how `pull` talks to a target (kept here so tests can call them).

pub mod files;
pub mod gdb;
pub mod pull;
pub mod report;
pub mod timeline;
