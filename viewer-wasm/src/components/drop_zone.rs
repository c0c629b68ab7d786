//! The whole page takes dropped files: profiles (on "Compare with base", the base) and
//! source files. Before the first profile, the page says what to drop.

use crate::load;
use crate::state::{Action, Slot};
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, Element};
use yew::prelude::*;

#[derive(Properties)]
pub struct Props {
    /// Reads the dropped files ([`load::read_files`]).
    pub dispatch: Callback<Action>,
    /// The page.
    pub children: Html,
}

/// Never equal: the children are the whole page, built anew on every render of the app
/// (which renders only when the state changed). Comparing them would walk the page for
/// an answer that is nearly always "changed", and yew diffs them anyway.
impl PartialEq for Props {
    fn eq(&self, _: &Self) -> bool {
        false
    }
}

#[function_component(DropZone)]
pub fn drop_zone(p: &Props) -> Html {
    let dragging = use_state(|| false);
    let ondragover = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            if !*dragging {
                dragging.set(true);
            }
        })
    };
    let ondragleave = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            // Only when leaving the window, not when moving between children.
            if e.related_target().is_none() {
                dragging.set(false);
            }
        })
    };
    let ondrop = {
        let dragging = dragging.clone();
        let d = p.dispatch.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            let on_base = e
                .target()
                .and_then(|t| t.dyn_into::<Element>().ok())
                .and_then(|el| el.closest(".base-drop").ok().flatten())
                .is_some();
            let files = load::files_of(e.data_transfer().and_then(|dt| dt.files()));
            load::read_files(
                files,
                if on_base { Slot::Base } else { Slot::Main },
                d.clone(),
            );
        })
    };
    html! {
        <div class={if *dragging { "app dragging" } else { "app" }} {ondragover} {ondragleave} {ondrop}>
            {p.children.clone()}
            <div class="drop-overlay"><div>{"Drop to open · on “Compare with base” to diff"}</div></div>
        </div>
    }
}

/// What the page shows before the first profile.
pub fn welcome() -> Html {
    html! {
        <section class="empty">
            <h1>{"Drop a heap profile anywhere"}</h1>
            <p>{"pprof files, gzipped or not: from heapsnap, Go's runtime, pprof-rs, jemalloc_pprof…"}</p>
            <p>{"Drop a second profile on "}<em>{"Compare with base"}</em>{" to see what grew. Drop source files to read them next to the numbers."}</p>
            <p class="muted">{"Everything runs in this tab: nothing is uploaded."}</p>
        </section>
    }
}
