//! The page: toolbar, status, and the view chosen. Pure rendering of [`State`]; every
//! change goes through [`Action`].

use crate::flame::FlameGraph;
use crate::load;
use crate::source::SourceView;
use crate::state::{Action, Slot, State, View};
use crate::top::TopTable;
use host_cli::analysis::format_value;
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, Element, HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

fn files_of(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(crate::hash::initial_state);
    let dragging = use_state(|| false);
    {
        let d = state.dispatcher();
        use_effect_with((), move |_| load::preload(d));
    }
    {
        let h = crate::hash::encode(&state);
        use_effect_with(h, |h| crate::hash::write(h));
    }
    let picker = |slot: Slot| {
        let d = state.dispatcher();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let files = files_of(input.files());
            input.set_value("");
            load::read_files(files, slot, d.clone());
        })
    };
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
        let d = state.dispatcher();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            let on_base = e
                .target()
                .and_then(|t| t.dyn_into::<Element>().ok())
                .and_then(|el| el.closest(".base-drop").ok().flatten())
                .is_some();
            let files = files_of(e.data_transfer().and_then(|dt| dt.files()));
            load::read_files(
                files,
                if on_base { Slot::Base } else { Slot::Main },
                d.clone(),
            );
        })
    };
    let send = |f: fn(String) -> Action| {
        let d = state.dispatcher();
        Callback::from(move |s: String| d.dispatch(f(s)))
    };
    let text_change = |f: fn(String) -> Action| {
        let d = state.dispatcher();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            d.dispatch(f(input.value()))
        })
    };
    let on_search = {
        let d = state.dispatcher();
        Callback::from(move |e: InputEvent| {
            let input: HtmlInputElement = e.target_unchecked_into();
            d.dispatch(Action::Search(input.value()))
        })
    };
    let on_sample = {
        let d = state.dispatcher();
        Callback::from(move |e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            d.dispatch(Action::SampleType(s.value()))
        })
    };
    let view_btn = |v: View, label: &'static str| {
        let d = state.dispatcher();
        let active = state.view == v;
        html! {
            <button role="tab" aria-selected={active.to_string()} class={if active { "tab active" } else { "tab" }}
                data-view={v.as_str()} onclick={Callback::from(move |_| d.dispatch(Action::View(v)))}>{label}</button>
        }
    };
    let derived = state.derived.clone();
    let toolbar_controls = derived.as_ref().map(|d| {
        let types = state.shown.as_ref().map(|ix| ix.profile.sample_types()).unwrap_or_default();
        let current = state.sample_type().unwrap_or_default();
        // Plain strings, not yew's `classes!` (its set type costs kilobytes of wasm).
        let field_class = if d.filter_error.is_some() { "field bad" } else { "field" };
        html! {
            <>
                <label class="field">
                    <span>{"sample"}</span>
                    <select data-testid="sample-type" onchange={on_sample}>
                        { for types.iter().map(|&(t, u)| html! {
                            <option value={t.to_owned()} selected={t == current}>{format!("{t} ({u})")}</option>
                        }) }
                    </select>
                </label>
                <label class={field_class}>
                    <span>{"focus"}</span>
                    <input type="text" data-testid="focus" placeholder="regex" spellcheck="false"
                        value={state.focus.clone()} onchange={text_change(Action::Focus)} />
                </label>
                <label class={field_class}>
                    <span>{"ignore"}</span>
                    <input type="text" data-testid="ignore" placeholder="regex" spellcheck="false"
                        value={state.ignore.clone()} onchange={text_change(Action::Ignore)} />
                </label>
                <label class="field">
                    <span>{"search"}</span>
                    <input type="search" data-testid="search" placeholder="highlight frames" spellcheck="false"
                        value={state.search.clone()} oninput={on_search} />
                </label>
            </>
        }
    });
    let base_chip = state.base.as_ref().map(|b| {
        let d = state.dispatcher();
        html! {
            <button class="chip" title="Stop comparing" onclick={Callback::from(move |_| d.dispatch(Action::ClearBase))}>
                {format!("base: {} ✕", b.name)}
            </button>
        }
    });
    let status = match (&state.main, &derived) {
        (Some(m), Some(d)) => {
            let st = state.sample_type().unwrap_or("");
            let what = match &state.base {
                Some(b) => format!("{} − {}", m.name, b.name),
                None => m.name.clone(),
            };
            let filtered = (!state.focus.is_empty() || !state.ignore.is_empty())
                .then(|| format!(" · shown {}", format_value(d.shown, &d.unit)));
            html! {
                <div class="status">
                    <span class="file">{what}</span>
                    <span>{format!("{st}: {} total{}", format_value(d.total, &d.unit), filtered.unwrap_or_default())}</span>
                    <span class="muted">{format!("{} stacks", d.samples)}</span>
                    if state.base.is_some() { <span class="legend"><i class="grew"></i>{"grew"}<i class="shrank"></i>{"shrank"}</span> }
                </div>
            }
        }
        _ => html! {},
    };
    let error = state.error.as_ref().map(|e| {
        let d = state.dispatcher();
        html! {
            <div class="error" data-testid="error" role="alert">
                <strong>{"Cannot open this file. "}</strong><span>{e.clone()}</span>
                <button class="close" title="Dismiss" onclick={Callback::from(move |_| d.dispatch(Action::DismissError))}>{"✕"}</button>
            </div>
        }
    });
    let filter_error = derived.as_ref().and_then(|d| d.filter_error.clone()).map(|e| {
        html! { <div class="error soft" data-testid="filter-error" role="alert">{format!("Filter not applied: {e}")}</div> }
    });
    let comments = derived
        .as_ref()
        .filter(|d| !d.comments.is_empty())
        .map(|d| {
            html! {
                <ul class="comments" data-testid="comments">
                    { for d.comments.iter().map(|c| html! { <li>{c.clone()}</li> }) }
                </ul>
            }
        });
    let loading = state
        .loading
        .as_ref()
        .map(|l| html! { <div class="loading">{format!("Reading {l}…")}</div> });
    let main = match &derived {
        None => html! {
            <section class="empty">
                <h1>{"Drop a heap profile anywhere"}</h1>
                <p>{"pprof files, gzipped or not: from heapsnap, Go's runtime, pprof-rs, jemalloc_pprof…"}</p>
                <p>{"Drop a second profile on "}<em>{"Compare with base"}</em>{" to see what grew. Drop source files to read them next to the numbers."}</p>
                <p class="muted">{"Everything runs in this tab: nothing is uploaded."}</p>
            </section>
        },
        Some(d) => match state.view {
            View::Flame => html! {
                <FlameGraph tree={d.flame.clone()} zoom={state.zoom.clone()} search={state.search.clone()}
                    unit={d.unit.clone()} total={d.total} generation={state.generation}
                    on_zoom={{ let d = state.dispatcher(); Callback::from(move |z| d.dispatch(Action::Zoom(z))) }}
                    on_source={send(Action::Source)} />
            },
            View::Top => html! {
                <TopTable state={state.clone_state()} on_sort={{ let d = state.dispatcher(); Callback::from(move |c| d.dispatch(Action::Sort(c))) }}
                    on_source={send(Action::Source)} on_focus={send(Action::FocusFunction)}
                    on_show_all={{ let d = state.dispatcher(); Callback::from(move |_| d.dispatch(Action::ShowAllRows)) }} />
            },
            View::Source => html! { <SourceView state={state.clone_state()} /> },
        },
    };
    html! {
        <div class={if *dragging { "app dragging" } else { "app" }} {ondragover} {ondragleave} {ondrop}>
            <header class="bar">
                <div class="brand"><span class="logo">{"▦"}</span>{"heapsnap"}</div>
                <label class="btn primary">
                    {"Open profile…"}
                    <input type="file" data-testid="file-input" multiple=true onchange={picker(Slot::Main)} />
                </label>
                <label class="btn base-drop" title="Drop or pick the older profile: values become new − base">
                    {"Compare with base…"}
                    <input type="file" data-testid="base-input" onchange={picker(Slot::Base)} />
                </label>
                {base_chip.unwrap_or_default()}
                <div class="controls">{toolbar_controls.unwrap_or_default()}</div>
            </header>
            if derived.is_some() {
                <nav class="tabs" role="tablist">
                    {view_btn(View::Flame, "Flame graph")}
                    {view_btn(View::Top, "Top")}
                    {view_btn(View::Source, "Source")}
                    {status}
                </nav>
            }
            {error.unwrap_or_default()}
            {filter_error.unwrap_or_default()}
            {comments.unwrap_or_default()}
            {loading.unwrap_or_default()}
            <main>{main}</main>
            <div class="drop-overlay"><div>{"Drop to open · on “Compare with base” to diff"}</div></div>
        </div>
    }
}

trait CloneState {
    fn clone_state(&self) -> crate::state::ByPtr<State>;
}

impl CloneState for UseReducerHandle<State> {
    fn clone_state(&self) -> crate::state::ByPtr<State> {
        crate::state::ByPtr(std::rc::Rc::new((**self).clone()))
    }
}
