//! The flame graph: one `<canvas>` (not a DOM node per frame), root on top. Click a
//! frame to zoom into it, breadcrumbs to zoom out, hover for details, search to
//! highlight; inlined frames are drawn lighter with a hatched left edge.

use crate::state::{Action, ByPtr};
use heapsnap_profile::analysis::{format_percent, format_value, Edges, FlameTree, Pattern};
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};
use yew::prelude::*;

/// Height of one row of frames, CSS pixels.
const ROW: f64 = 20.0;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub tree: ByPtr<FlameTree>,
    pub zoom: Vec<String>,
    pub search: String,
    pub unit: String,
    /// Total the percentages are relative to (pprof's).
    pub total: i64,
    /// Profile load counter: the first paint of each load is marked for the benchmark.
    pub generation: u32,
    /// Zooms ([`Action::Zoom`]) and opens the source view ([`Action::Source`]).
    pub dispatch: Callback<Action>,
}

/// What the pointer is over.
#[derive(Clone, PartialEq)]
struct Hover {
    node: usize,
    x: f64,
    y: f64,
}

/// Text matcher for the search box: a regex when it compiles, else a substring.
enum Matcher {
    Re(Pattern),
    Sub(String),
}

impl Matcher {
    fn new(q: &str) -> Option<Self> {
        if q.is_empty() {
            return None;
        }
        Some(
            crate::regex::compile(q)
                .map(Matcher::Re)
                .unwrap_or_else(|_| Matcher::Sub(q.to_owned())),
        )
    }
    fn is_match(&self, s: &str) -> bool {
        match self {
            Matcher::Re(r) => r.is_match(s),
            Matcher::Sub(q) => s.contains(q.as_str()),
        }
    }
}

#[function_component(FlameGraph)]
pub fn flame_graph(p: &Props) -> Html {
    let canvas = use_node_ref();
    let hover = use_state(|| None::<Hover>);
    let resize = use_state(|| 0u32);
    let painted = use_mut_ref(|| u32::MAX);
    let zoom_names: Vec<&str> = p.zoom.iter().map(String::as_str).collect();
    let zoom = p.tree.find_path(&zoom_names).unwrap_or(0);
    // Redraw on window resize.
    {
        let resize = resize.clone();
        use_effect_with((), move |_| {
            let count = Rc::new(Cell::new(0u32));
            let listener = web_sys::window().map(|w| {
                gloo_events::EventListener::new(&w, "resize", move |_| {
                    count.set(count.get().wrapping_add(1));
                    resize.set(count.get());
                })
            });
            move || drop(listener)
        });
    }
    {
        let canvas = canvas.clone();
        let tree = p.tree.clone();
        let generation = p.generation;
        use_effect_with(
            (tree, zoom, p.search.clone(), *resize, generation),
            move |(tree, zoom, search, _, generation)| {
                if let Some(c) = canvas.cast::<HtmlCanvasElement>() {
                    if *painted.borrow() != *generation {
                        crate::perf::mark("flame-drawing");
                    }
                    draw(&c, tree, *zoom, Matcher::new(search).as_ref());
                    // Every redraw (a sample type, filter or zoom change), for the benchmark.
                    crate::perf::mark("flame-drawn");
                    if *painted.borrow() != *generation {
                        *painted.borrow_mut() = *generation;
                        crate::perf::mark("flame-painted");
                    }
                }
            },
        );
    }
    let onmousemove = {
        let hover = hover.clone();
        let tree = p.tree.clone();
        Callback::from(move |e: MouseEvent| {
            let Some(c) = e.target_dyn_into::<HtmlCanvasElement>() else {
                return;
            };
            let hit = hit(&c, &tree, zoom, e.offset_x() as f64, e.offset_y() as f64);
            // The tooltip is placed in viewport coordinates (never clipped by the box).
            let new = hit.map(|node| Hover {
                node,
                x: e.client_x() as f64,
                y: e.client_y() as f64,
            });
            if *hover != new {
                hover.set(new);
            }
        })
    };
    let onmouseleave = {
        let hover = hover.clone();
        Callback::from(move |_| hover.set(None))
    };
    let path_to = {
        let tree = p.tree.clone();
        move |i: usize| -> Vec<String> {
            tree.path(i)
                .into_iter()
                .skip(1)
                .map(|j| tree.name(j).to_owned())
                .collect()
        }
    };
    let onclick = {
        let tree = p.tree.clone();
        let dispatch = p.dispatch.clone();
        let path_to = path_to.clone();
        Callback::from(move |e: MouseEvent| {
            let Some(c) = e.target_dyn_into::<HtmlCanvasElement>() else {
                return;
            };
            if let Some(i) = hit(&c, &tree, zoom, e.offset_x() as f64, e.offset_y() as f64) {
                dispatch.emit(Action::Zoom(path_to(i)));
            }
        })
    };
    let ondblclick = {
        let tree = p.tree.clone();
        let dispatch = p.dispatch.clone();
        Callback::from(move |e: MouseEvent| {
            let Some(c) = e.target_dyn_into::<HtmlCanvasElement>() else {
                return;
            };
            if let Some(i) = hit(&c, &tree, zoom, e.offset_x() as f64, e.offset_y() as f64) {
                if i != 0 {
                    dispatch.emit(Action::Source(tree.name(i).to_owned()));
                }
            }
        })
    };
    // Breadcrumbs: root, then every frame down to the zoomed one.
    let crumbs = {
        let path = p.tree.path(zoom);
        let items = path.iter().enumerate().map(|(k, &i)| {
            let dispatch = p.dispatch.clone();
            let target: Vec<String> = p.zoom.iter().take(k).cloned().collect();
            let label = if i == 0 { "all".to_owned() } else { p.tree.name(i).to_owned() };
            let current = k + 1 == path.len();
            html! {
                <>
                    if k > 0 { <span class="sep">{"›"}</span> }
                    <button class={if current { "crumb current" } else { "crumb" }} disabled={current}
                        onclick={Callback::from(move |_| dispatch.emit(Action::Zoom(target.clone())))}>{label}</button>
                </>
            }
        });
        html! { <nav class="crumbs" aria-label="zoom">{ for items }</nav> }
    };
    let tooltip = hover.as_ref().filter(|h| h.node < p.tree.nodes.len()).map(|h| {
        let n = &p.tree.nodes[h.node];
        let pct = |v: i64| if p.total == 0 { 0.0 } else { v as f64 / p.total as f64 * 100.0 };
        let fmt = |v: i64| format_value(v, &p.unit);
        let vw = web_sys::window().and_then(|w| w.inner_width().ok()).and_then(|v| v.as_f64()).unwrap_or(1e9);
        // Right of the pointer, or left of it near the right edge.
        let horizontal = if h.x > vw - 440.0 {
            format!("right:{}px", (vw - h.x) as i64 + 14)
        } else {
            format!("left:{}px", h.x as i64 + 14)
        };
        let top = h.y as i64 + 16;
        html! {
            <div class="tooltip" style={format!("{horizontal};top:{top}px")}>
                <div class="tt-name">{p.tree.name(h.node)}
                    if n.inlined { <span class="badge inl">{"inlined"}</span> }
                </div>
                if p.tree.diff {
                    <div>{format!("change {}{} ({})", if n.value > 0 { "+" } else { "" }, fmt(n.value), format_percent(pct(n.value)))}</div>
                    <div class="muted">{format!("new {} · base {}", fmt(n.width - n.shrank()), fmt(n.shrank()))}</div>
                } else {
                    <div>{format!("{} ({})", fmt(n.value), format_percent(pct(n.value)))}</div>
                    if p.tree.self_value(h.node) != 0 { <div class="muted">{format!("self {}", fmt(p.tree.self_value(h.node)))}</div> }
                }
                <div class="muted hint">{"click to zoom · double-click for source"}</div>
            </div>
        }
    });
    html! {
        <section class="flame">
            {crumbs}
            <div class="flame-box">
                <canvas ref={canvas} data-testid="flame-graph" {onmousemove} {onmouseleave} {onclick} {ondblclick}></canvas>
                {tooltip.unwrap_or_default()}
            </div>
        </section>
    }
}

/// Horizontal mapping of the zoomed frame onto the canvas: (x0 in value units, px per unit).
fn scale(tree: &FlameTree, zoom: usize, width: f64) -> (f64, f64) {
    let z = &tree.nodes[zoom];
    let w = (z.width.max(1)) as f64;
    (tree.x(zoom) as f64, width / w)
}

/// The frame under canvas point (x, y) in CSS pixels.
fn hit(c: &HtmlCanvasElement, tree: &FlameTree, zoom: usize, x: f64, y: f64) -> Option<usize> {
    let depth = (y / ROW).floor() as u32;
    let (x0, k) = scale(tree, zoom, c.client_width() as f64);
    let vx = x0 + x / k;
    let mut edges = Edges::default();
    let mut i = 0;
    while i < tree.nodes.len() {
        let n = &tree.nodes[i];
        let nx = edges.of(n);
        // Frames the draw leaves out (under 0.4 px) are not hovered either.
        let inside =
            (nx as f64) <= vx && vx < nx.wrapping_add(n.width) as f64 && n.width as f64 * k >= 0.4;
        if !inside {
            i = n.end as usize;
            continue;
        }
        if n.depth == depth {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// One frame to paint: its node, its left edge in value units and its horizontal
/// extent in device pixels.
struct Paint {
    node: u32,
    depth: u32,
    left: i64,
    x0: u32,
    x1: u32,
}

/// Draws the tree zoomed on `zoom` (ancestors span the full width).
///
/// The boxes are painted into pixel strips in wasm memory and handed to the canvas one
/// row of frames at a time (`putImageData`), each row's labels drawn over it with
/// `fillText`: a zoom into a profile of ~100k visible frames is then a few calls per
/// row instead of a colour string, a `fillStyle` parse and a `fillRect` per frame
/// (which took ~50 ms a zoom on the 550k-sample benchmark profile).
fn draw(c: &HtmlCanvasElement, tree: &FlameTree, zoom: usize, search: Option<&Matcher>) {
    let Some(parent) = c.parent_element() else {
        return;
    };
    let width = parent.client_width().max(100) as f64;
    let (x0, k) = scale(tree, zoom, width);
    let zn = &tree.nodes[zoom];
    let dpr = web_sys::window()
        .map(|w| w.device_pixel_ratio())
        .unwrap_or(1.0)
        .max(1.0);
    let Some(ctx) = c
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|x| x.dyn_into::<CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    // A frame's left edge and width in CSS pixels, from its left edge in value units.
    let css = |nx: i64, n: &heapsnap_profile::analysis::FlameNode| {
        let (nx, nw) = (nx as f64, n.width as f64);
        let px = ((nx - x0) * k).max(0.0);
        (px, ((nx + nw - x0) * k).min(width) - px)
    };
    // The visible frames, in device pixels. Off the zoomed range, or too thin to see:
    // the whole subtree is skipped (a tower of such frames would otherwise leave an
    // empty box below the graph).
    let dev_w = (width * dpr).round() as u32;
    let dev = |x: f64| ((x * dpr).round().max(0.0) as u32).min(dev_w);
    let mut boxes: Vec<Paint> = Vec::new();
    let mut rows = zn.depth as usize + 1;
    let (lo, hi) = (x0, x0 + zn.width.max(1) as f64);
    let mut edges = Edges::default();
    let mut i = 0;
    while i < tree.nodes.len() {
        let n = &tree.nodes[i];
        let left = edges.of(n);
        let (nx, nw) = (left as f64, n.width as f64);
        if nx + nw <= lo || nx >= hi || nw * k < 0.4 || n.width == 0 {
            i = n.end as usize;
            continue;
        }
        rows = rows.max(n.depth as usize + 1);
        let (px, pw) = css(left, n);
        let x0 = dev(px);
        // At least one device pixel, so thin frames still show.
        let x1 = dev(px + (pw - 1.0).max(0.0)).max(x0 + 1).min(dev_w);
        boxes.push(Paint {
            node: i as u32,
            depth: n.depth,
            left,
            x0,
            x1,
        });
        i += 1;
    }
    let height = rows as f64 * ROW + 1.0;
    // A new size clears the canvas and its state (font, transform) but reallocates its
    // pixels (~2.5 ms at this size): the canvas is resized only for a new width or more
    // rows than it has room for, and its box shows the rows of this graph (`overflow:
    // hidden`), the rest cleared. The strips below cover every row shown, and the state
    // set after the last resize still holds.
    let dev_h = (height * dpr).round() as u32;
    if c.width() != dev_w || c.height() < dev_h {
        // Room for half as many rows again: a zoom that widens frames too thin to show
        // before (deeper rows) then draws without a resize, which was most of the
        // first zoom's time on the 1M-sample synthetic profile. No room past what a
        // canvas may be (32,767 pixels high in Chromium).
        let most = (32_000.0 / (ROW * dpr)) as usize;
        let room = (rows + rows / 2).min(most).max(rows) as f64 * ROW + 1.0;
        c.set_width(dev_w);
        c.set_height((room * dpr).round() as u32);
        let size = format!("width:{}px;height:{}px", width as i64, room as i64);
        let _ = c.set_attribute("style", &size);
        let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
        ctx.set_font("12px ui-monospace, 'SF Mono', Menlo, Consolas, monospace");
        ctx.set_text_baseline("middle");
    } else if c.height() > dev_h {
        ctx.clear_rect(0.0, height - 1.0, width, c.height() as f64 / dpr);
    }
    if let Some(p) = parent.dyn_ref::<web_sys::HtmlElement>() {
        // The box's height, its 1 px borders included (`box-sizing: border-box`).
        let _ = p
            .style()
            .set_property("height", &format!("{}px", height as i64 + 2));
    }
    let char_w = ctx
        .measure_text("abcdefghijklmnopqrstuvwxyz")
        .map(|m| m.width() / 26.0)
        .unwrap_or(7.0)
        .max(1.0);
    // The boxes by row (a counting sort: the walk visits the rows interleaved).
    let mut start = vec![0u32; rows + 1];
    for b in &boxes {
        start[b.depth as usize + 1] += 1;
    }
    for d in 0..rows {
        start[d + 1] += start[d];
    }
    let mut order = vec![0u32; boxes.len()];
    for (j, b) in boxes.iter().enumerate() {
        let slot = &mut start[b.depth as usize];
        order[*slot as usize] = j as u32;
        *slot += 1;
    }
    // `start[d]` is now where row d ends.
    let h = dev(ROW - 1.0).max(1) as usize;
    // One strip, the canvas's width, cleared per row with one `memory.fill` (a `resize`
    // writes its zeros a byte at a time in this size-optimized build).
    let stride = dev_w as usize * 4;
    let mut strip = vec![0u8; stride * h];
    // Per function name, once per draw: its colour hash and whether the search matches
    // it (a regex call per frame would cost more than the painting).
    let mut seen: Vec<Option<(u32, Option<bool>)>> = vec![None; tree.names.len()];
    let mut info = |i: usize| -> (u32, Option<bool>) {
        let id = tree.nodes[i].name as usize;
        if let Some(Some(x)) = seen.get(id) {
            return *x;
        }
        let name = tree.name(i);
        let h = name
            .bytes()
            .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
        let x = (h, search.map(|m| m.is_match(name)));
        if let Some(slot) = seen.get_mut(id) {
            *slot = Some(x);
        }
        x
    };
    let mut begin = 0;
    for (d, &end) in start.iter().take(rows).enumerate() {
        let row = &order[begin..end as usize];
        begin = end as usize;
        strip.fill(0);
        for &j in row {
            let b = &boxes[j as usize];
            let (a, z) = (b.x0 as usize * 4, b.x1 as usize * 4);
            let i = b.node as usize;
            let (hash, matched) = info(i);
            let rgba = color(hash, &tree.nodes[i], tree.diff, matched);
            for p in strip[a..z].chunks_exact_mut(4) {
                p.copy_from_slice(&rgba);
            }
        }
        // The other pixel lines are copies of the first, the row's frames and the gaps
        // between them (cleared) in one copy a line: per frame, thousands of thin
        // frames made tens of thousands of tiny copies.
        for y in 1..h {
            strip.copy_within(0..stride, y * stride);
        }
        if let Ok(img) =
            web_sys::ImageData::new_with_u8_clamped_array_and_sh(Clamped(&strip), dev_w, h as u32)
        {
            let _ = ctx.put_image_data(&img, 0.0, (d as f64 * ROW * dpr).round());
        }
        // Over the strip: each frame's hatched left edge if it was inlined ("inlined
        // into its caller"), then its label where it fits.
        let py = d as f64 * ROW;
        for &j in row {
            let b = &boxes[j as usize];
            let i = b.node as usize;
            let n = &tree.nodes[i];
            let (px, pw) = css(b.left, n);
            if n.inlined && pw > 4.0 {
                ctx.set_fill_style_str("rgba(120, 60, 20, 0.55)");
                let mut yy = py;
                while yy < py + ROW - 1.0 {
                    ctx.fill_rect(px, yy, 3.0, 2.0);
                    yy += 4.0;
                }
            }
            if pw > 3.0 * char_w {
                let name = tree.name(i);
                let muted = info(i).1 == Some(false);
                ctx.set_fill_style_str(if muted { "#6b6b6b" } else { "#1c1917" });
                let room = ((pw - 8.0) / char_w).floor() as usize;
                let x = px + if n.inlined { 6.0 } else { 4.0 };
                let _ = ctx.fill_text(&fit(name, room), x, py + ROW / 2.0);
            }
        }
    }
}

/// `name` shortened to `room` characters with an ellipsis.
fn fit(name: &str, room: usize) -> String {
    let n = name.chars().count();
    if n <= room {
        return name.to_owned();
    }
    if room <= 2 {
        return String::new();
    }
    let mut s: String = name.chars().take(room - 1).collect();
    s.push('…');
    s
}

/// Fill colour: warm hues by name (`h`, its hash: stable across reloads), lighter when
/// inlined;
/// in a diff, red for growth and blue for shrinkage by the net share, grey for no
/// change; search matches
/// in violet and the rest greyed.
fn color(
    h: u32,
    n: &heapsnap_profile::analysis::FlameNode,
    diff: bool,
    matched: Option<bool>,
) -> [u8; 4] {
    let (hue, sat, light) = if n.name == u32::MAX {
        (30, 22, 84) // the root: neutral
    } else {
        if matched == Some(true) {
            (280, 62, 70 + (h % 8))
        } else if diff {
            if n.value == 0 {
                // No net change: neutral grey (the weakest growth tint would read as "grew").
                (0, 0, 86)
            } else {
                let r = if n.width == 0 {
                    0.0
                } else {
                    n.value as f64 / n.width as f64
                };
                // sqrt: small relative changes still show.
                let (hue, s) = if r >= 0.0 {
                    (4, r.sqrt())
                } else {
                    (214, (-r).sqrt())
                };
                if matched == Some(false) {
                    (hue, 8, 88)
                } else {
                    (hue, (20.0 + 65.0 * s) as u32, (88.0 - 30.0 * s) as u32)
                }
            }
        } else {
            let hue = 8 + (h % 42); // red-orange … amber
            let light = if n.inlined { 80 } else { 62 + (h >> 16) % 10 };
            if matched == Some(false) {
                (hue, 10, light + 12)
            } else {
                (hue, 78 + (h >> 8) % 16, light)
            }
        }
    };
    hsl(hue, sat, light)
}

/// Opaque RGBA of a CSS `hsl(h, s, l)` colour (h in whole degrees, s and l in
/// percent), as the browser computes it: integer arithmetic in units of 1/10000.
fn hsl(h: u32, s: u32, l: u32) -> [u8; 4] {
    let (s, l) = (s.min(100), l.min(100));
    let c = (100 - (2 * l).abs_diff(100)) * s;
    let (sector, within) = ((h % 360) / 60, h % 60);
    let x = c * if sector % 2 == 0 { within } else { 60 - within } / 60;
    let (r, g, b) = match sector {
        0 => (c, x, 0),
        1 => (x, c, 0),
        2 => (0, c, x),
        3 => (0, x, c),
        4 => (x, 0, c),
        _ => (c, 0, x),
    };
    let m = l * 100 - c / 2;
    let v = |t: u32| ((t + m) * 255 + 5000) / 10000;
    [v(r) as u8, v(g) as u8, v(b) as u8, 255]
}

#[cfg(test)]
mod tests {
    use super::hsl;

    #[test]
    fn hsl_gives_the_css_colours() {
        // Values as Chromium's canvas reads them back from `fillStyle = "hsl(…)"`.
        assert_eq!(hsl(0, 100, 50), [255, 0, 0, 255]);
        assert_eq!(hsl(120, 100, 25), [0, 128, 0, 255]);
        assert_eq!(hsl(210, 50, 50), [64, 128, 191, 255]);
        assert_eq!(hsl(30, 22, 84), [223, 214, 205, 255]);
        assert_eq!(hsl(0, 0, 86), [219, 219, 219, 255]);
        assert_eq!(hsl(280, 62, 70), [194, 131, 226, 255]);
        assert_eq!(hsl(400, 100, 50), hsl(40, 100, 50));
    }
}
