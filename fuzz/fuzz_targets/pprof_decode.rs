//! Any bytes into the pprof reader (gzip sniffing, inflate cap, prost, validation), and
//! what it accepts into the operations that trust validation: no panic, no unbounded
//! allocation; a decoded profile re-encodes to the same profile.
#![no_main]

mod limits;

use heapsnap_profile::analysis::{self, Filter};
use heapsnap_profile::profile::{decode, decode_limited, diff, encode};
use libfuzzer_sys::fuzz_target;
use limits::limits;

fuzz_target!(|data: &[u8]| {
    // A small cap keeps gzip bombs fast; the caps themselves are what is being tested.
    let Ok(p) = decode_limited(data, &limits()) else {
        return;
    };
    let again = decode(&encode(&p)).expect("an encoded valid profile decodes");
    assert_eq!(again, p);
    for i in 0..p.sample_type.len() {
        let _ = analysis::top(&p, i, &Filter::none());
        let _ = heapsnap_profile::export::folded(&p, i);
    }
    // pprof's drop_frames/keep_frames (regexes from the file): the pruned profile
    // stays valid and analysable.
    let mut q = p.clone();
    if q.remove_uninteresting_frames().is_ok() {
        q.check_valid().expect("a pruned valid profile is valid");
        for i in 0..q.sample_type.len() {
            let _ = analysis::top(&q, i, &Filter::none());
        }
    }
    if let Ok(d) = diff(&p, &p) {
        d.check_valid().expect("a diff of a valid profile is valid");
    }
});
