//! The bar at the top: open a profile, compare with a base, and, once a profile is
//! shown, its sample type and the focus / ignore / search expressions.

use crate::load;
use crate::state::{Action, ByPtr, Slot};
use heapsnap_profile::analysis::Index;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// Name of the base profile, when comparing.
    pub base: Option<String>,
    /// The profile shown, for its sample types; `None` before one is loaded (then there
    /// are no controls).
    pub profile: Option<ByPtr<Index<'static>>>,
    /// The sample type shown.
    pub sample_index: usize,
    pub focus: String,
    pub ignore: String,
    pub search: String,
    /// The focus / ignore expressions do not compile (their fields are marked).
    pub filter_bad: bool,
    pub dispatch: Callback<Action>,
}

#[function_component(Toolbar)]
pub fn toolbar(p: &Props) -> Html {
    let picker = |slot: Slot| {
        let d = p.dispatch.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let files = load::files_of(input.files());
            input.set_value("");
            load::read_files(files, slot, d.clone());
        })
    };
    let base_chip = p.base.as_ref().map(|name| {
        let d = p.dispatch.clone();
        html! {
            <button class="chip" title="Stop comparing" onclick={Callback::from(move |_| d.emit(Action::ClearBase))}>
                {format!("base: {name} ✕")}
            </button>
        }
    });
    let controls = p
        .profile
        .as_ref()
        .map(|ix| controls(p, &ix.profile.sample_types()));
    html! {
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
            <div class="controls">{controls.unwrap_or_default()}</div>
        </header>
    }
}

/// The sample type, focus, ignore and search fields.
fn controls(p: &Props, types: &[(&str, &str)]) -> Html {
    let text_change = |f: fn(String) -> Action| {
        let d = p.dispatch.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            d.emit(f(input.value()))
        })
    };
    let on_search = {
        let d = p.dispatch.clone();
        Callback::from(move |e: InputEvent| {
            let input: HtmlInputElement = e.target_unchecked_into();
            d.emit(Action::Search(input.value()))
        })
    };
    let on_sample = {
        let d = p.dispatch.clone();
        Callback::from(move |e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            d.emit(Action::SampleType(s.value()))
        })
    };
    let current = types.get(p.sample_index).map(|t| t.0).unwrap_or_default();
    // Plain strings, not yew's `classes!` (its set type costs kilobytes of wasm).
    let field_class = if p.filter_bad { "field bad" } else { "field" };
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
                    value={p.focus.clone()} onchange={text_change(Action::Focus)} />
            </label>
            <label class={field_class}>
                <span>{"ignore"}</span>
                <input type="text" data-testid="ignore" placeholder="regex" spellcheck="false"
                    value={p.ignore.clone()} onchange={text_change(Action::Ignore)} />
            </label>
            <label class="field">
                <span>{"search"}</span>
                <input type="search" data-testid="search" placeholder="highlight frames" spellcheck="false"
                    value={p.search.clone()} oninput={on_search} />
            </label>
        </>
    }
}
