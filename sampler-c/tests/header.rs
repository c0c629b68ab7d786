//! `include/heapsnap.h` is what cbindgen makes of `src/lib.rs` today: a stale header
//! fails here with the command that regenerates it.

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not read sampler-c");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = dir.join("include/heapsnap.h");
    if std::env::var_os("HEAPSNAP_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/heapsnap.h");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is not what cbindgen generates from src/lib.rs; regenerate it with \
         HEAPSNAP_BLESS=1 cargo test -p sampler-c --test header, and commit it",
        path.display()
    );
}
