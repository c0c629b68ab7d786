//! Under the toolbar: the view tabs with what is shown (file, sample type, totals), and
//! the notices (errors, the profile's comments, "Reading…"). Plain functions of the
//! state: small, and cheaper in the bundle than components of their own.

use crate::state::{Action, Derived, State, View};
use heapsnap_profile::analysis::format_value;
use heapsnap_profile::profile::is_retention_comment;
use yew::prelude::*;

/// The view tabs and the status line.
pub fn tabs(s: &State, d: &Derived, dispatch: &Callback<Action>) -> Html {
    let tab = |v: View, label: &'static str| {
        let dispatch = dispatch.clone();
        let active = s.view == v;
        html! {
            <button role="tab" aria-selected={active.to_string()} class={if active { "tab active" } else { "tab" }}
                data-view={v.as_str()} onclick={Callback::from(move |_| dispatch.emit(Action::View(v)))}>{label}</button>
        }
    };
    let status = s.main.as_ref().map(|m| {
        let st = s.sample_type().unwrap_or("");
        let what = match &s.base {
            Some(b) => format!("{} − {}", m.name, b.name),
            None => m.name.clone(),
        };
        let filtered = (!s.focus.is_empty() || !s.ignore.is_empty())
            .then(|| format!(" · shown {}", format_value(d.shown, &d.unit)));
        html! {
            <div class="status">
                <span class="file">{what}</span>
                <span>{format!("{st}: {} total{}", format_value(d.total, &d.unit), filtered.unwrap_or_default())}</span>
                <span class="muted">{format!("{} stacks", d.samples)}</span>
                if s.base.is_some() { <span class="legend"><i class="grew"></i>{"grew"}<i class="shrank"></i>{"shrank"}</span> }
            </div>
        }
    });
    html! {
        <nav class="tabs" role="tablist">
            {tab(View::Flame, "Flame graph")}
            {tab(View::Top, "Top")}
            {tab(View::Source, "Source")}
            {status.unwrap_or_default()}
        </nav>
    }
}

/// The error of the last file, the filter's, the profile's comments (a retention
/// profile's first: its label), and what is being read.
pub fn notices(s: &State, dispatch: &Callback<Action>) -> Html {
    let d = s.derived.as_ref();
    let error = s.error.as_ref().map(|e| {
        let dispatch = dispatch.clone();
        html! {
            <div class="error" data-testid="error" role="alert">
                <strong>{"Cannot open this file. "}</strong><span>{e.clone()}</span>
                <button class="close" title="Dismiss" onclick={Callback::from(move |_| dispatch.emit(Action::DismissError))}>{"✕"}</button>
            </div>
        }
    });
    let filter_error = d.and_then(|d| d.filter_error.as_ref()).map(|e| {
        html! { <div class="error soft" data-testid="filter-error" role="alert">{format!("Filter not applied: {e}")}</div> }
    });
    let comments = d.filter(|d| !d.comments.is_empty()).map(|d| {
        html! {
            <ul class="comments" data-testid="comments">
                // A retention profile's mark is its label: frames are references, not calls.
                { for d.comments.iter().map(|c| html! {
                    <li class={is_retention_comment(c).then_some("retention")}>{c.clone()}</li>
                }) }
            </ul>
        }
    });
    let loading = s
        .loading
        .as_ref()
        .map(|l| html! { <div class="loading">{format!("Reading {l}…")}</div> });
    html! {
        <>
            {error.unwrap_or_default()}
            {filter_error.unwrap_or_default()}
            {comments.unwrap_or_default()}
            {loading.unwrap_or_default()}
        </>
    }
}
