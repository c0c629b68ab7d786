//! View, sample type, filters, zoom and function live in the URL hash, so a reload (or
//! a shared link, with the same file) shows the same thing. The profile itself never
//! goes into a URL: `?profile=URL` (or `#profile=URL`; `base=URL` for a diff) only names
//! a same-origin file to fetch, for `cargo xtask demo`.

use crate::state::{State, View};
use web_sys::UrlSearchParams;

/// Reads the settings from the current URL hash into a fresh state.
pub fn initial_state() -> State {
    let mut s = State::default();
    let Some(p) = hash_params() else {
        return s;
    };
    let get = |k: &str| p.get(k).unwrap_or_default();
    s.view = View::parse(&get("view"));
    s.sample = get("si");
    s.focus = get("focus");
    s.ignore = get("ignore");
    s.search = get("search");
    s.func = get("fn");
    let z = get("zoom");
    s.zoom = if z.is_empty() {
        Vec::new()
    } else {
        z.split(';').map(str::to_owned).collect()
    };
    s
}

fn hash_params() -> Option<UrlSearchParams> {
    let h = web_sys::window()?.location().hash().ok()?;
    UrlSearchParams::new_with_str(h.trim_start_matches('#')).ok()
}

/// The hash for a state (only non-default settings, so URLs stay short).
pub fn encode(s: &State) -> String {
    let Ok(p) = UrlSearchParams::new() else {
        return String::new();
    };
    if let Some(url) = preload_url("profile") {
        let hash = hash_params();
        if hash.as_ref().and_then(|h| h.get("profile")).is_some() {
            p.append("profile", &url);
            // A diff link's base stays while it is being loaded (nothing is yet) or
            // is the base shown; clearing or replacing the base drops it.
            if let Some(b) = hash.and_then(|h| h.get("base")) {
                let pending = s.main.is_none() && s.base.is_none();
                if pending || s.base.as_ref().is_some_and(|l| l.name == b) {
                    p.append("base", &b);
                }
            }
        }
    }
    p.append("view", s.view.as_str());
    let si = s.sample_name();
    if !si.is_empty() {
        p.append("si", &si);
    }
    for (k, v) in [
        ("focus", &s.focus),
        ("ignore", &s.ignore),
        ("search", &s.search),
        ("fn", &s.func),
    ] {
        if !v.is_empty() {
            p.append(k, v);
        }
    }
    if !s.zoom.is_empty() {
        // A loop, not `join`: 0.5 KiB less of the bundle.
        let mut zoom = String::new();
        for (i, z) in s.zoom.iter().enumerate() {
            if i > 0 {
                zoom.push(';');
            }
            zoom.push_str(z);
        }
        p.append("zoom", &zoom);
    }
    String::from(p.to_string())
}

// Replaces the URL hash without adding a history entry or firing `hashchange`, a
// moment after the last change: `history.replaceState` costs Chromium ~4 ms a call,
// which a zoom click or a keystroke in the search box should not wait for. (In JS: a
// timer callback from wasm would bring wasm-bindgen's closure code into the bundle.)
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
let pending = null;
export function write(hash) {
  if (pending === null) {
    setTimeout(() => {
      const h = pending;
      pending = null;
      if (location.hash.replace(/^#/, '') !== h) history.replaceState(null, '', '#' + h);
    }, 150);
  }
  pending = hash;
}
"#)]
extern "C" {
    pub fn write(hash: &str);
}

/// A profile URL to preload: `?key=URL` in the query, else `#key=URL` in the hash.
pub fn preload_url(key: &str) -> Option<String> {
    let loc = web_sys::window()?.location();
    let q = UrlSearchParams::new_with_str(&loc.search().ok()?).ok()?;
    q.get(key)
        .or_else(|| hash_params()?.get(key))
        .filter(|s| !s.is_empty())
}
