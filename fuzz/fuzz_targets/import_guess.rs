//! Any bytes through the CLI's and viewer's one entry point, `import::guess_limited`
//! (every sniffer and reader: snapshots, COBS serial captures, gzip and raw pprof,
//! gperftools, Go `debug=1` and jemalloc heap text, gperftools CPU profiles, Go
//! goroutine/threadcreate and contention text, folded stacks), and a snapshot (or a
//! legacy profile, read into one) on through the conversion the CLI runs, within the
//! default limits: no panic, and (with libFuzzer's `-malloc_limit_mb`/`-rss_limit_mb`
//! set by `cargo xtask test`) no input that makes memory grow past its budget.
#![no_main]

mod limits;

use heapsnap_profile::import::{self, Input, NoSymbols};
use heapsnap_profile::limits::Budget;
use libfuzzer_sys::fuzz_target;
use limits::limits;

fuzz_target!(|data: &[u8]| {
    let limits = limits();
    match import::guess_limited(data, &limits) {
        Ok(Input::Profile(p)) => p.check_valid().expect("a read profile is valid"),
        Ok(Input::Snapshot { snapshot, .. }) => {
            let mut budget = Budget::new(&limits, data.len() as u64);
            let mut symbols = NoSymbols(&snapshot);
            if let Ok(p) =
                import::to_profile_limited(&snapshot, &mut symbols, &mut |_, _| {}, &mut budget)
            {
                p.check_valid()
                    .expect("a converted snapshot is a valid profile");
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
