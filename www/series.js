// The heap over time: the chart of a serial capture's snapshots (one point per good
// frame), loaded only when a capture is opened (viewer-wasm/src/load.rs hands it the
// importer's worker, which keeps the decoded frames and the ELF; www/import-worker.js).
//
// In-use bytes (or objects) per point, the functions that grew most from the first
// point to the last as stacked areas (the rows `heapsnap timeline` lists), the drop
// counters and bad frames on the same axis. A click shows that point in the flame, top
// and source views below; a shift-click shows the diff from the point shown to the one
// clicked (the older is the base); "Peak" jumps to the largest point. Each point is
// converted by the worker and opened through the page's own file input, so the views
// read it exactly as they read a file.
import { openFiles } from './main.js';

const SVG = 'http://www.w3.org/2000/svg';
const COLORS = ['#c2410c', '#2563eb', '#059669', '#a21caf', '#ca8a04', '#0891b2', '#be123c', '#4d7c0f'];
const OTHER = '#d6d3d1';

let S = null;
let opening = false;

const root = () => document.getElementById('series');

/// Shows the chart of `summary` (the worker's `SeriesReader.read()`), read from `name`;
/// the worker's messages that are not answers to the chart go to `other`.
export function open(worker, summary, name, other = () => {}) {
  close();
  window.__heapsnapSeriesPhases = summary.phases;
  const last = summary.points.length - 1;
  S = { worker, summary, name, areas: null, areasError: null, shown: [last], metric: 'bytes', pending: new Map(), next: 1 };
  worker.onmessage = (e) => {
    const m = e.data;
    if (m.id === undefined) { other(m); return; }
    const p = S && S.worker === worker && S.pending.get(m.id);
    if (!p) return;
    S.pending.delete(m.id);
    if (m.error !== undefined) p.reject(new Error(m.error)); else p.resolve(m);
  };
  render();
  fillAreas(worker).catch((e) => { if (S && S.worker === worker) { S.areasError = e.message; render(); } });
}

/// How many points one request for the areas covers.
const RANGE = 250;

/// The growing functions, then their values a range of points at a time, drawn as
/// they come (every quarter second at most).
async function fillAreas(worker) {
  const { growing } = await ask({ growing: true });
  if (!S || S.worker !== worker) return;
  // Per metric (bytes, objects), per function, per point; no objects when a point has
  // none.
  S.areas = { ...growing, values: { bytes: growing.functions.map(() => []), objects: growing.functions.map(() => []) } };
  const n = S.summary.points.length;
  let drawn = performance.now();
  for (let from = 0; from < n; from += RANGE) {
    const { values } = await ask({ areas: [from, Math.min(n, from + RANGE)] });
    if (!S || S.worker !== worker) return;
    for (const m of ['bytes', 'objects']) {
      if (!values[m]) S.areas.values[m] = null;
      if (S.areas.values[m]) values[m].forEach((vs, k) => S.areas.values[m][k].push(...vs));
    }
    if (performance.now() - drawn > 250 || from + RANGE >= n) {
      render();
      drawn = performance.now();
    }
  }
}

/// Ends the series (its worker and the memory it holds): another file was opened.
export function close() {
  if (!S) return;
  S.worker.terminate();
  S = null;
  const r = root();
  r.hidden = true;
  r.replaceChildren();
}

// Any file the user opens (picked or dropped) ends the series; the chart's own do not.
document.addEventListener('change', (e) => { if (!opening && e.target.type === 'file') close(); }, true);
document.addEventListener('drop', () => { if (!opening) close(); }, true);

function ask(message) {
  const id = S.next++;
  const p = new Promise((resolve, reject) => S.pending.set(id, { resolve, reject }));
  S.worker.postMessage({ id, ...message });
  return p;
}

function label(i) {
  const p = S.summary.points[i];
  const when = [p.cycle == null ? null : `cycle ${p.cycle}`, p.time == null ? null : `${seconds(p.time)}`].filter(Boolean);
  return when.length ? `${p.name} (${when.join(', ')})` : p.name;
}

/// Device time (a snapshot's timestamp) in seconds, to the millisecond.
function seconds(t) {
  return `${t.toFixed(3)} s`;
}

function fileOf(profile, i, when) {
  return new File([profile], `${S.summary.points[i].name}.pb`, { lastModified: when });
}

/// Says why files opened together could not be read as a series (there is no chart to
/// show: the message stands where it would be).
export function fail(message) {
  close();
  const r = root();
  r.hidden = false;
  r.replaceChildren(el('div', { class: 'series-error', role: 'alert', 'data-testid': 'series-error' }, message));
}

/// Opens `profile`, the last point's (the worker's first answer), in the views below,
/// as a click on it does: the page's own file input reads it.
export function openLast(profile) {
  if (!S) return;
  opening = true;
  try { openFiles([fileOf(profile, S.summary.points.length - 1, 2)]); } finally { opening = false; }
}

async function show(i) {
  S.shown = [i];
  S.error = null;
  render();
  try {
    // Measured (the benchmark reads both): the round trip to the worker for one point,
    // and the worker's conversion alone (its ELF parsed, the snapshot decoded and
    // symbolized in wasm).
    const start = performance.now();
    const { profile, took } = await ask({ frame: i });
    performance.measure('heapsnap:series-frame', { start, end: performance.now() });
    performance.measure('heapsnap:series-convert', { start, duration: took });
    // One point: not a diff any more.
    document.querySelector('.chip[title="Stop comparing"]')?.click();
    opening = true;
    try { openFiles([fileOf(profile, i, 2)]); } finally { opening = false; }
  } catch (e) {
    S.error = e.message;
    render();
  }
}

async function diff(a, b) {
  if (a === b) return show(a);
  const [old, young] = a < b ? [a, b] : [b, a];
  S.shown = [old, young];
  S.error = null;
  render();
  try {
    const [pa, pb] = await Promise.all([ask({ frame: old }), ask({ frame: young })]);
    // Two profiles at once: the older (by modification time) is the base.
    opening = true;
    try { openFiles([fileOf(pa.profile, old, 1), fileOf(pb.profile, young, 2)]); } finally { opening = false; }
  } catch (e) {
    S.error = e.message;
    render();
  }
}

function value(p) {
  return S.metric === 'bytes' ? p.bytes : p.objects;
}

// pprof's auto units for bytes (1024-based: B, kB, MB, GB), two decimals at most.
function bytesLabel(v) {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let x = Math.abs(v);
  let u = 0;
  while (x >= 1024 && u < units.length - 1) { x /= 1024; u++; }
  const n = u === 0 ? String(x) : x.toFixed(2).replace(/\.?0+$/, '');
  return `${v < 0 ? '-' : ''}${n}${units[u]}`;
}

function valueLabel(v) {
  return S.metric === 'bytes' ? bytesLabel(v) : v.toLocaleString('en-US');
}

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function render() {
  const r = root();
  if (!S) return;
  r.hidden = false;
  const { points, bad, frames } = S.summary;
  const n = points.length;

  const head = el('div', { class: 'series-head' });
  head.append(el('strong', {}, 'Heap over time'));
  head.append(el('span', { class: 'muted' },
    ` ${S.name}: ${n} snapshots` + (frames ? ` of ${frames} frames, ${bad.length} bad` : '') +
    (points.every((p) => p.exact) ? ' · exact heap totals' : ' · sampled estimate where the device did not count')));
  const peak = el('button', { class: 'btn', 'data-testid': 'series-peak', title: 'Show the point with the most in use' }, 'Peak');
  peak.onclick = () => {
    let best = 0;
    points.forEach((p, i) => { if ((value(p) ?? -Infinity) > (value(points[best]) ?? -Infinity)) best = i; });
    show(best);
  };
  const whole = el('button', { class: 'btn', 'data-testid': 'series-first-last', title: 'Diff of the first and last points' }, 'First → last');
  whole.onclick = () => diff(0, n - 1);
  const metric = el('select', { 'data-testid': 'series-metric', title: 'What the chart shows' });
  for (const [v, t] of [['bytes', 'in-use bytes'], ['objects', 'in-use objects']]) {
    const o = el('option', { value: v }, t);
    if (v === S.metric) o.selected = true;
    metric.append(o);
  }
  metric.onchange = () => { S.metric = metric.value; render(); };
  head.append(peak, whole, metric);
  const shown = S.shown.length === 1 ? `showing #${S.shown[0]} ${label(S.shown[0])}`
    : `showing the diff #${S.shown[0]} → #${S.shown[1]}`;
  head.append(el('span', { class: 'series-shown', 'data-testid': 'series-shown' }, shown));

  const width = Math.max(480, (r.clientWidth || 1000) - 36);
  const height = 190;
  const pad = { l: 64, r: 12, t: 10, b: 34 };
  const w = width - pad.l - pad.r;
  const h = height - pad.t - pad.b;
  const x = (i) => pad.l + (n === 1 ? w / 2 : (i * w) / (n - 1));
  const vals = points.map((p) => value(p) ?? 0);
  const max = Math.max(1, ...vals);
  const y = (v) => pad.t + h - (Math.max(0, v) / max) * h;

  const chart = svg('svg', { width, height, class: 'series-chart', 'data-testid': 'series-chart', 'data-points': n });
  // Grid and y labels: 0, half, max.
  for (const f of [0, 0.5, 1]) {
    const v = max * f;
    chart.append(svg('line', { x1: pad.l, x2: pad.l + w, y1: y(v), y2: y(v), class: 'grid' }));
    const t = svg('text', { x: pad.l - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'axis' });
    t.textContent = valueLabel(Math.round(v));
    chart.append(t);
  }
  // Stacked areas: the growing functions from the bottom, then the rest of the heap.
  const areas = S.areas && S.areas.values[S.metric];
  // Points whose areas are known so far (they come a range at a time).
  const known = areas && areas.length ? areas[0].length : 0;
  if (known) {
    const base = new Array(known).fill(0);
    const layers = areas.map((vs, k) => ({ name: S.areas.functions[k], vs, color: COLORS[k % COLORS.length] }));
    const sum = base.map((_, i) => areas.reduce((a, vs) => a + vs[i], 0));
    layers.push({ name: 'rest of the heap', vs: sum.map((s, i) => Math.max(0, vals[i] - s)), color: OTHER });
    for (const layer of layers) {
      const top = layer.vs.map((v, i) => base[i] + v);
      let d = `M${x(0)},${y(top[0])}`;
      for (let i = 1; i < known; i++) d += `L${x(i)},${y(top[i])}`;
      for (let i = known - 1; i >= 0; i--) d += `L${x(i)},${y(base[i])}`;
      const path = svg('path', { d: `${d}Z`, fill: layer.color, 'fill-opacity': layer.color === OTHER ? 0.5 : 0.55, class: 'area' });
      chart.append(path);
      for (let i = 0; i < known; i++) base[i] = top[i];
    }
  }
  // The total line.
  let line = '';
  vals.forEach((v, i) => { line += `${i ? 'L' : 'M'}${x(i)},${y(v)}`; });
  chart.append(svg('path', { d: line, class: 'total' }));
  if (n <= 400) {
    vals.forEach((v, i) => chart.append(svg('circle', { cx: x(i), cy: y(v), r: 2.5, class: 'pt' })));
  }
  // The points shown below.
  for (const i of S.shown) {
    chart.append(svg('line', { x1: x(i), x2: x(i), y1: pad.t, y2: pad.t + h, class: 'sel' }));
    chart.append(svg('circle', { cx: x(i), cy: y(vals[i]), r: 5, class: 'pt sel', 'data-testid': 'series-selected', 'data-index': i }));
  }
  // Drops (a full table, lost samples) where they happened, and the bad frames
  // between the good ones they came between (by capture offset).
  const axisY = pad.t + h;
  points.forEach((p, i) => {
    if (!Object.keys(p.drops).length) return;
    const m = svg('rect', { x: x(i) - 1.5, y: axisY + 3, width: 3, height: 8, class: 'drop', 'data-testid': 'series-drop', 'data-index': i });
    const t = svg('title');
    t.textContent = `#${i}: ${Object.entries(p.drops).map(([k, v]) => `${k}=${v}`).join(', ')}`;
    m.append(t);
    chart.append(m);
  });
  for (const b of bad) {
    const after = points.findIndex((p) => p.offset != null && p.offset > b.offset);
    const at = after < 0 ? x(n - 1) + 6 : after === 0 ? x(0) - 6 : (x(after - 1) + x(after)) / 2;
    const m = svg('text', { x: at, y: axisY + 12, 'text-anchor': 'middle', class: 'bad', 'data-testid': 'series-bad' });
    m.textContent = '×';
    const t = svg('title');
    t.textContent = `bad frame at offset ${b.offset} (${b.len} bytes): ${b.error}`;
    m.append(t);
    chart.append(m);
  }
  // x labels: first and last point.
  for (const i of n > 1 ? [0, n - 1] : [0]) {
    const t = svg('text', { x: x(i), y: height - 6, 'text-anchor': i ? 'end' : 'start', class: 'axis' });
    const p = points[i];
    t.textContent = `#${i}${p.cycle == null ? '' : ` · cycle ${p.cycle}`}${p.time == null ? '' : ` · ${seconds(p.time)}`}`;
    chart.append(t);
  }
  const guide = svg('line', { y1: pad.t, y2: pad.t + h, class: 'guide', visibility: 'hidden' });
  chart.append(guide);
  const hit = svg('rect', { x: pad.l - (n === 1 ? w / 2 : w / (2 * (n - 1))), y: 0, width: n === 1 ? w : w + w / (n - 1), height, class: 'hit', 'data-testid': 'series-hit', 'data-left': x(0), 'data-step': n === 1 ? 0 : w / (n - 1) });
  chart.append(hit);

  const tip = el('div', { class: 'series-tip', 'data-testid': 'series-tip', hidden: '' });
  const nearest = (e) => {
    const box = chart.getBoundingClientRect();
    const px = e.clientX - box.left;
    return n === 1 ? 0 : Math.min(n - 1, Math.max(0, Math.round(((px - pad.l) * (n - 1)) / w)));
  };
  hit.onmousemove = (e) => {
    const i = nearest(e);
    guide.setAttribute('x1', x(i));
    guide.setAttribute('x2', x(i));
    guide.setAttribute('visibility', 'visible');
    tip.replaceChildren(...tipLines(i).map((l) => el('div', {}, l)));
    tip.hidden = false;
    const box = r.getBoundingClientRect();
    tip.style.left = `${Math.min(e.clientX - box.left + 14, box.width - 300)}px`;
    tip.style.top = `${e.clientY - box.top + 14}px`;
  };
  hit.onmouseleave = () => { tip.hidden = true; guide.setAttribute('visibility', 'hidden'); };
  hit.onclick = (e) => {
    const i = nearest(e);
    if (e.shiftKey) diff(S.shown[S.shown.length - 1], i); else show(i);
  };

  const legend = el('div', { class: 'series-legend', 'data-testid': 'series-legend' });
  const done = S.areas ? (S.areas.values.bytes[0] || []).length : 0;
  const complete = S.areas && (!S.areas.functions.length || done === points.length);
  if (complete || S.areasError) legend.dataset.complete = '1';
  if (S.areas && !S.areas.values[S.metric]) {
    legend.append(el('span', { class: 'muted' }, `no ${S.metric} per function: a point has no inuse_objects`));
  } else if (S.areas) {
    if (!complete) legend.append(el('span', { class: 'muted' }, `symbolizing the points… ${done} of ${points.length}`));
    if (!S.areas.functions.length) legend.append(el('span', { class: 'muted' }, 'no function grew from the first point to the last'));
    S.areas.functions.forEach((f, k) => {
      const item = el('span', { class: 'key', title: f, 'data-function': f });
      item.append(el('i', { style: `background:${COLORS[k % COLORS.length]}` }), document.createTextNode(f));
      legend.append(item);
    });
  } else if (!S.areasError) {
    legend.append(el('span', { class: 'muted' }, 'finding the functions that grew…'));
  }
  if (S.areasError) legend.append(el('span', { class: 'series-error' }, `no areas: ${S.areasError}`));
  legend.append(el('span', { class: 'muted hint' }, 'click a point to show it · shift-click to diff with the one shown'));

  const parts = [head, chart, legend];
  if (S.error) parts.push(el('div', { class: 'series-error', role: 'alert', 'data-testid': 'series-error' }, S.error));
  if (bad.length) {
    const d = el('details', { class: 'series-bad' });
    d.append(el('summary', {}, `${bad.length} bad frame${bad.length > 1 ? 's' : ''} in the capture`));
    for (const b of bad) d.append(el('div', {}, `offset ${b.offset} (${b.len} bytes): ${b.error}`));
    parts.push(d);
  }
  parts.push(tip);
  r.replaceChildren(...parts);
}

function tipLines(i) {
  const p = S.summary.points[i];
  const lines = [`#${i} ${label(i)}`];
  if (p.bytes != null) lines.push(`in use: ${bytesLabel(p.bytes)} (${p.bytes.toLocaleString('en-US')} B) in ${p.objects.toLocaleString('en-US')} objects${p.exact ? '' : ' (sampled estimate)'}`);
  const areas = S.areas && S.areas.values[S.metric];
  if (areas && i < (areas[0] || []).length) {
    S.areas.functions.forEach((f, k) => lines.push(`${f}: ${valueLabel(areas[k][i])}`));
  }
  const drops = Object.entries(p.drops);
  if (drops.length) lines.push(`dropped: ${drops.map(([k, v]) => `${k}=${v}`).join(', ')}`);
  return lines;
}
