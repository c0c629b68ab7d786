//! host-cli: the `heapsnap` command line over heapsnap-profile and heapsnap-symbolize.
//! The library part is only what the binary prints (kept here so tests can call it).

pub mod report;
