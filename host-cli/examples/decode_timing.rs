// scratch: native timing of the viewer's load pipeline
use host_cli::analysis::{decode_compact, Filter, Index};
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let p = decode_compact(&bytes).unwrap();
        let t1 = t.elapsed();
        let ix = Index::new(&p);
        let t2 = t.elapsed();
        let f = ix.flame(p.default_sample_index(), &Filter::none());
        let t3 = t.elapsed();
        println!(
            "decode {:?} index {:?} flame {:?} samples {} nodes {}",
            t1,
            t2 - t1,
            t3 - t2,
            p.sample.len(),
            f.nodes.len()
        );
    }
}
