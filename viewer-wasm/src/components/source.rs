//! The source view: per-line flat and cum of one function. Source text comes only from
//! files the user drops (matched by path suffix); without them, the lines with values
//! are listed and the file to drop is named.

use crate::state::ByPtr;
use heapsnap_profile::analysis::{format_value, SourceTable};
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// The function's lines (`None`: no function picked, or none with samples).
    pub source: Option<ByPtr<SourceTable>>,
    /// The function picked ("" = none).
    pub func: String,
    pub unit: String,
    /// Dropped source files: (path as given, text).
    pub sources: ByPtr<Vec<(String, Rc<str>)>>,
}

/// The dropped file whose path is the longest suffix of `file` at a `/` boundary.
pub fn match_source<'a>(
    file: &str,
    dropped: &'a [(String, Rc<str>)],
) -> Option<&'a (String, Rc<str>)> {
    let file = file.replace('\\', "/");
    dropped
        .iter()
        .filter(|(name, _)| {
            let name = name.trim_start_matches("./");
            file == name || file.ends_with(&format!("/{name}"))
        })
        .max_by_key(|(name, _)| name.len())
}

#[function_component(SourceView)]
pub fn source_view(p: &Props) -> Html {
    let Some(src) = p.source.as_ref() else {
        let msg = if p.func.is_empty() {
            "Pick a function in the top table (or double-click a flame frame) to see its lines."
                .to_owned()
        } else {
            format!("{} has no samples for this sample type and filter.", p.func)
        };
        return html! { <section class="source" data-testid="source-view"><p class="empty-note">{msg}</p></section> };
    };
    let unit = &p.unit;
    let text = match_source(&src.file, &p.sources);
    let header = html! {
        <header class="src-head">
            <h2>{&src.function}</h2>
            <span class="muted">{if src.file.is_empty() { "(no file name in the profile)".to_owned() } else { src.file.clone() }}</span>
            <span class="src-totals">{format!("flat {} · cum {}", format_value(src.flat, unit), format_value(src.cum, unit))}</span>
        </header>
    };
    let body = match text {
        Some((_, t)) => with_text(src, t, unit),
        None => without_text(src, unit),
    };
    html! { <section class="source" data-testid="source-view">{header}{body}</section> }
}

fn max_cum(src: &SourceTable) -> i64 {
    src.lines
        .iter()
        .map(|l| l.cum.abs())
        .max()
        .unwrap_or(0)
        .max(1)
}

fn row(line: i64, flat: i64, cum: i64, code: Option<&str>, unit: &str, max: i64) -> Html {
    let heat = (cum.abs() as f64 / max as f64 * 100.0).round() as i64;
    let hot = flat != 0 || cum != 0;
    html! {
        <tr class={hot.then_some("hot")} data-line={line.to_string()}
            style={hot.then(|| format!("--heat:{heat}%"))}>
            <td class="ln">{line}</td>
            <td class="num" data-value={flat.to_string()}>{if flat != 0 { format_value(flat, unit) } else { String::new() }}</td>
            <td class="num" data-value={cum.to_string()}>{if cum != 0 { format_value(cum, unit) } else { String::new() }}</td>
            if let Some(c) = code { <td class="code"><pre>{c}</pre></td> }
        </tr>
    }
}

fn with_text(src: &SourceTable, text: &str, unit: &str) -> Html {
    let lines: Vec<&str> = text.lines().collect();
    // `src.lines` is ascending by line: a binary search, no map.
    let vals = |n: i64| {
        src.lines
            .binary_search_by_key(&n, |l| l.line)
            .map_or((0, 0), |i| (src.lines[i].flat, src.lines[i].cum))
    };
    let first = src
        .lines
        .iter()
        .map(|l| l.line)
        .filter(|&l| l > 0)
        .min()
        .unwrap_or(1);
    let first = if src.start_line > 0 {
        src.start_line.min(first)
    } else {
        first
    };
    let last = src.lines.iter().map(|l| l.line).max().unwrap_or(first);
    let (from, to) = ((first - 2).max(1), (last + 4).min(lines.len() as i64));
    let max = max_cum(src);
    let rows = (from..=to).map(|n| {
        let (f, c) = vals(n);
        row(
            n,
            f,
            c,
            Some(lines.get((n - 1) as usize).copied().unwrap_or("")),
            unit,
            max,
        )
    });
    html! {
        <table class="src">
            <thead><tr><th class="ln">{"line"}</th><th class="num">{"flat"}</th><th class="num">{"cum"}</th><th class="code">{"source"}</th></tr></thead>
            <tbody>{ for rows }</tbody>
        </table>
    }
}

fn without_text(src: &SourceTable, unit: &str) -> Html {
    let base = src.file.rsplit('/').next().unwrap_or(&src.file).to_owned();
    let max = max_cum(src);
    html! {
        <>
            <p class="note">
                if src.file.is_empty() {
                    {"The profile records no source file for this function; lines and values below."}
                } else {
                    {"Drop "}<code>{base}</code>{" (from "}<code>{&src.file}</code>{") onto the page to see the source text next to these values."}
                }
            </p>
            <table class="src">
                <thead><tr><th class="ln">{"line"}</th><th class="num">{"flat"}</th><th class="num">{"cum"}</th></tr></thead>
                <tbody>{ for src.lines.iter().map(|l| row(l.line, l.flat, l.cum, None, unit, max)) }</tbody>
            </table>
        </>
    }
}
