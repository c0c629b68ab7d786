//! Shared helpers of the end-to-end tests (paths of artifacts built by `cargo xtask test`).
