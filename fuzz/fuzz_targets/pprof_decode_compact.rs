//! The viewer's decoder (`analysis::decode_compact`: samples read by hand and merged by
//! stack) against the reference reader (`profile::decode`: prost + validation): on any
//! bytes both accept or both reject, and an accepted profile gives the same top table
//! and a well-formed flame tree. The streaming form (`CompactDecoder`, fed in pieces)
//! agrees with the one-buffer form, merging where it reads or on a thread of its own:
//! the same profile, or the same error where it names one itself. `analysis::top`
//! (natively without the index's stacks) agrees with the index's table.
#![no_main]

mod limits;

use heapsnap_profile::analysis::{self, decode_compact_limited, CompactDecoder, Filter, Index};
use heapsnap_profile::profile::decode_limited;
use libfuzzer_sys::fuzz_target;
use limits::limits;

fuzz_target!(|data: &[u8]| {
    let full = decode_limited(data, &limits());
    let compact = decode_compact_limited(data, &limits());
    assert_eq!(
        full.is_ok(),
        compact.is_ok(),
        "{:?} vs {:?}",
        full.as_ref().err(),
        compact.as_ref().err()
    );
    if !heapsnap_profile::profile::is_gzip(data) {
        let mut d = CompactDecoder::with_limits(&limits(), data.len() as u64);
        // Every other input merged on a thread of its own, as the CLI merges a large one.
        if data.len() % 2 == 1 {
            d = d.merging_beside();
        }
        let piece = 1 + data.len() % 13;
        for c in data.chunks(piece) {
            d.feed(c);
        }
        match d.finish() {
            Ok(streamed) => {
                assert_eq!(Some(&streamed), compact.as_ref().ok(), "pieces of {piece}")
            }
            // What the streaming decoder names itself is the whole-file error.
            Err(Some(e)) => assert_eq!(
                Some(e.to_string()),
                compact.as_ref().err().map(|e| e.to_string()),
                "pieces of {piece}"
            ),
            // Left to the whole-file decoder (an invalid profile, or a sample the
            // streaming reader does not take, e.g. a group, which the prost path reads).
            Err(None) => {}
        }
    }
    let (Ok(f), Ok(c)) = (full, compact) else {
        return;
    };
    let ix = Index::new(&c);
    for i in 0..f.sample_type.len() {
        assert_eq!(
            analysis::top(&f, i, &Filter::none()),
            ix.top(i, &Filter::none())
        );
        let tree = ix.flame(i, &Filter::none());
        for (k, n) in tree.nodes.iter().enumerate() {
            assert!(n.end as usize > k && n.end as usize <= tree.nodes.len());
        }
    }
});
