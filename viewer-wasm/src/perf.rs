//! Performance marks (`heapsnap:<name>`) that the benchmark and the browser tests read
//! to time a load and a redraw.

/// Sets the mark `heapsnap:<name>`; nothing in native builds (the reducer's unit
/// tests), where there is no browser to ask.
pub fn mark(name: &str) {
    #[cfg(target_arch = "wasm32")]
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(&format!("heapsnap:{name}"));
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = name;
}
