//! host-cli: the `heapsnap` command line over heapsnap-profile and heapsnap-symbolize.
//! The library part is what the binary prints and the files it reads and writes beyond
//! its inputs (kept here so tests can call them).

pub mod files;
pub mod report;
