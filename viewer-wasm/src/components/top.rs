//! The top table: pprof's `-top` columns, sortable; a row opens its source view, the
//! ⌖ button focuses the flame graph on it. Numeric cells carry the raw number in
//! `data-value` for tests and scripts.

use crate::state::{Action, ByPtr, SortCol};
use heapsnap_profile::analysis::{self, format_percent, format_value, Inline, TopRow};
use yew::prelude::*;

/// Rows rendered before "show all" (the DOM is not a good place for 50k rows).
const FIRST_ROWS: usize = 1000;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub table: ByPtr<analysis::TopTable>,
    pub unit: String,
    /// The profile is a diff (values are coloured by sign).
    pub diff: bool,
    /// Column and descending.
    pub sort: (SortCol, bool),
    /// The function whose row is selected (that of the source view).
    pub selected: String,
    /// Every row, not only the first [`FIRST_ROWS`].
    pub all_rows: bool,
    /// Sorts, opens a source view, focuses the flame graph, shows all rows.
    pub dispatch: Callback<Action>,
}

#[function_component(TopTable)]
pub fn top_table(p: &Props) -> Html {
    let top = &p.table;
    let unit = p.unit.as_str();
    let (col, desc) = p.sort;
    let mut rows: Vec<&TopRow> = top.rows.iter().collect();
    // One sort for both orders, through the analysis' shared sort (each instantiation
    // of a sort is kilobytes of wasm). Unstable is the same order: names are unique,
    // and the order ends on the name.
    if col != SortCol::Flat {
        let r = &top.rows;
        let order = heapsnap_profile::sorted_order(r.len(), &|a, b| {
            let (a, b) = (&r[a], &r[b]);
            match col {
                SortCol::Name => b.name.cmp(&a.name),
                _ => b
                    .cum
                    .abs()
                    .cmp(&a.cum.abs())
                    .then_with(|| a.name.cmp(&b.name)),
            }
        });
        rows = heapsnap_profile::permute(rows, &order);
    }
    if !desc {
        rows.reverse();
    }
    let total_rows = rows.len();
    if !p.all_rows {
        rows.truncate(FIRST_ROWS);
    }
    let diff = p.diff;
    let head = |label: &'static str, c: SortCol, class: &'static str| {
        let dispatch = p.dispatch.clone();
        let arrow = if col == c {
            if desc {
                " ▾"
            } else {
                " ▴"
            }
        } else {
            ""
        };
        html! {
            <th class={class} onclick={Callback::from(move |_| dispatch.emit(Action::Sort(c)))}
                aria-sort={if col == c { if desc { "descending" } else { "ascending" } } else { "none" }}>
                {label}{arrow}
            </th>
        }
    };
    let sign = |v: i64| {
        if !diff || v == 0 {
            "num"
        } else if v > 0 {
            "num grew"
        } else {
            "num shrank"
        }
    };
    let body = rows.iter().map(|r| {
        let name = r.name.clone();
        let on_source = p.dispatch.clone();
        let on_focus = p.dispatch.clone();
        let focus_name = r.name.clone();
        let onclick = Callback::from(move |_| on_source.emit(Action::Source(name.clone())));
        let focus = Callback::from(move |e: MouseEvent| {
            e.stop_propagation();
            on_focus.emit(Action::FocusFunction(focus_name.clone()))
        });
        let selected = p.selected == r.name;
        html! {
            <tr data-testid="top-row" data-name={r.name.clone()} class={selected.then_some("selected")} {onclick}>
                <td class={sign(r.flat)} data-value={r.flat.to_string()}>{format_value(r.flat, unit)}</td>
                <td class="num pct" data-value={raw(r.flat_pct)}>{format_percent(r.flat_pct)}</td>
                <td class="num pct" data-value={raw(r.sum_pct)}>{format_percent(r.sum_pct)}</td>
                <td class={sign(r.cum)} data-value={r.cum.to_string()}>{format_value(r.cum, unit)}</td>
                <td class="num pct" data-value={raw(r.cum_pct)}>{format_percent(r.cum_pct)}</td>
                <td class="fn">
                    <span class="fn-name">{&r.name}</span>
                    { match r.inline {
                        Inline::Full => html! { <span class="badge inl" title="always inlined into its callers">{"inline"}</span> },
                        Inline::Partial => html! { <span class="badge inl" title="inlined into some callers">{"partial-inline"}</span> },
                        Inline::No => html! {},
                    } }
                    <button class="row-focus" title="Focus the flame graph on this function" onclick={focus}>{"⌖"}</button>
                </td>
            </tr>
        }
    });
    let more = (!p.all_rows && total_rows > FIRST_ROWS).then(|| {
        let dispatch = p.dispatch.clone();
        html! {
            <button class="more" onclick={Callback::from(move |_| dispatch.emit(Action::ShowAllRows))}>
                {format!("Show all {total_rows} functions")}
            </button>
        }
    });
    html! {
        <section class="top">
            <table data-testid="top-table">
                <thead><tr>
                    {head("flat", SortCol::Flat, "num sortable")}
                    {head("flat%", SortCol::Flat, "num sortable")}
                    <th class="num">{"sum%"}</th>
                    {head("cum", SortCol::Cum, "num sortable")}
                    {head("cum%", SortCol::Cum, "num sortable")}
                    {head("name", SortCol::Name, "fn sortable")}
                </tr></thead>
                <tbody>{ for body }</tbody>
            </table>
            {more.unwrap_or_default()}
        </section>
    }
}

/// A float as JavaScript prints it (shortest round-trip), without Rust's float
/// formatting code in the bundle.
fn raw(v: f64) -> String {
    String::from(
        js_sys::Number::from(v)
            .to_string_with_radix(10)
            .unwrap_or_else(|_| "NaN".into()),
    )
}
