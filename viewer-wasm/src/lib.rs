//! viewer-wasm: the Yew app behind `www/`. Drop a pprof heap profile and get a flame
//! graph, a top table and source views, computed in this tab with the same heapsnap-profile
//! analysis `heapsnap top` uses; nothing is uploaded.
//!
//! Preloading: `index.html?profile=URL` (or `#profile=URL`, plus `base=URL` for a
//! diff) fetches a same-origin profile at start, which is how `cargo xtask demo`
//! opens straight into the flame graph.

mod app;
mod components;
mod hash;
mod load;
mod perf;
mod regex;
mod state;

#[cfg(test)]
mod tests;

pub use components::source::match_source;
pub use state::{regex_escape, View};

/// Talc instead of the default dlmalloc: 3.8 KiB (1.6 KiB gzipped) smaller in the
/// bundle, with load times and peak memory the same within noise in
/// `cargo xtask bench-viewer`.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// Entry point called by the wasm-bindgen glue: mounts the app on `#app` (or `<body>`).
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    let root = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("app"));
    match root {
        Some(r) => yew::Renderer::<app::App>::with_root(r).render(),
        None => yew::Renderer::<app::App>::new().render(),
    };
}
