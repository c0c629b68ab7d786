//! All of the app's state in one reducer (yew's `function_todomvc` pattern): views only
//! render it and dispatch [`Action`]s. The profile shown is indexed once, when it is
//! loaded (or the base changes); what the views show ([`Derived`]) is recomputed here
//! from that index, with the heapsnap-profile analysis, whenever an input of it changes.

use heapsnap_profile::analysis::{Filter, FlameTree, Index, SourceTable, TopTable};
use heapsnap_profile::profile::{self, Profile};
use std::rc::Rc;
use yew::Reducible;

/// Which view fills the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Flame,
    Top,
    Source,
}

impl View {
    /// Name used in the URL hash.
    pub fn as_str(self) -> &'static str {
        match self {
            View::Flame => "flame",
            View::Top => "top",
            View::Source => "source",
        }
    }

    /// Parses a URL-hash name; unknown names fall back to the flame graph.
    pub fn parse(s: &str) -> Self {
        match s {
            "top" => View::Top,
            "source" => View::Source,
            _ => View::Flame,
        }
    }
}

/// Top-table column to sort by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortCol {
    /// pprof's order (flat, then name).
    Flat,
    Cum,
    Name,
}

/// Where a dropped or picked profile goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Main,
    Base,
}

/// A profile the user loaded.
#[derive(Debug, PartialEq)]
pub struct Loaded {
    /// File name (or URL) it came from.
    pub name: String,
    /// Decoded with samples merged by stack.
    pub profile: Rc<Profile>,
    /// Size of the file as read.
    pub bytes: usize,
}

/// `Rc` compared by pointer: cheap equality for yew props and effect dependencies.
#[derive(Debug)]
pub struct ByPtr<T>(pub Rc<T>);

impl<T> Clone for ByPtr<T> {
    fn clone(&self) -> Self {
        ByPtr(self.0.clone())
    }
}

impl<T> PartialEq for ByPtr<T> {
    fn eq(&self, o: &Self) -> bool {
        Rc::ptr_eq(&self.0, &o.0)
    }
}

impl<T> std::ops::Deref for ByPtr<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// What the views show, computed from the profile and the settings. Cheap to clone:
/// the tables are shared.
#[derive(Clone, Debug)]
pub struct Derived {
    /// The sample index shown.
    pub sample_index: usize,
    /// Its unit ("bytes", "count", …).
    pub unit: String,
    /// The top table: computed only when the Top view is shown (it is the costly
    /// part after decoding, and the flame graph comes first).
    pub top: Option<ByPtr<TopTable>>,
    /// pprof's total for the sample index (what percentages are relative to).
    pub total: i64,
    /// Sum of the values the filter keeps.
    pub shown: i64,
    pub flame: ByPtr<FlameTree>,
    pub source: Option<ByPtr<SourceTable>>,
    /// Profile comments (dropped-sample warnings and the like): always shown.
    pub comments: Vec<String>,
    /// Why the focus/ignore filter was not applied, if it was not.
    pub filter_error: Option<String>,
    /// Samples in the (merged) profile.
    pub samples: usize,
}

/// The whole state.
#[derive(Clone, Debug)]
pub struct State {
    pub main: Option<Rc<Loaded>>,
    pub base: Option<Rc<Loaded>>,
    /// `main`, or `diff(base, main)` when a base is loaded, indexed: built when a
    /// profile is loaded or the base changes, reused by every sample type, filter and
    /// view (the index is most of the cost of a view after decoding).
    pub shown: Option<ByPtr<Index<'static>>>,
    /// Sample type name ("" = the profile's default).
    pub sample: String,
    pub focus: String,
    pub ignore: String,
    pub search: String,
    pub view: View,
    /// Zoomed flame frame, as function names from the root.
    pub zoom: Vec<String>,
    /// Function of the source view.
    pub func: String,
    pub sort: (SortCol, bool),
    /// Dropped source files: (path as given, text).
    pub sources: ByPtr<Vec<(String, Rc<str>)>>,
    pub error: Option<String>,
    /// "Reading x…" while a file is read and decoded.
    pub loading: Option<String>,
    pub derived: Option<Rc<Derived>>,
    pub all_rows: bool,
    /// Bumped on every profile load (the flame graph marks its first paint of each).
    pub generation: u32,
}

/// A profile's index and first flame tree (of `sample_index`, unfiltered), built
/// before the profile is shown, a slice at a time while the page keeps answering input
/// (see `load`): showing it then builds neither, in one long task.
pub struct Ready {
    pub index: Rc<Index<'static>>,
    pub sample_index: usize,
    pub flame: Rc<FlameTree>,
}

/// Everything that changes the state.
pub enum Action {
    Loading(String),
    Loaded {
        slot: Slot,
        name: String,
        profile: Rc<Profile>,
        bytes: usize,
        /// Its index and first flame tree, when already built (see [`Ready`]).
        ready: Option<Ready>,
    },
    Failed(String),
    DismissError,
    ClearBase,
    SampleType(String),
    Focus(String),
    Ignore(String),
    Search(String),
    View(View),
    Zoom(Vec<String>),
    /// Open the source view of a function.
    Source(String),
    /// Focus the flame graph on a function (sets the focus filter to it).
    FocusFunction(String),
    Sort(SortCol),
    Sources(Vec<(String, String)>),
    ShowAllRows,
}

impl Default for State {
    fn default() -> Self {
        State {
            main: None,
            base: None,
            shown: None,
            sample: String::new(),
            focus: String::new(),
            ignore: String::new(),
            search: String::new(),
            view: View::Flame,
            zoom: Vec::new(),
            func: String::new(),
            sort: (SortCol::Flat, true),
            sources: ByPtr(Rc::new(Vec::new())),
            error: None,
            loading: None,
            derived: None,
            all_rows: false,
            generation: 0,
        }
    }
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        // What must be recomputed: nothing, the source view only, or everything.
        let mut refresh = Refresh::None;
        let mut ready = None;
        match action {
            Action::Loading(what) => s.loading = Some(what),
            Action::Loaded {
                slot,
                name,
                profile,
                bytes,
                ready: r,
            } => {
                let l = Rc::new(Loaded {
                    name,
                    profile,
                    bytes,
                });
                match slot {
                    Slot::Main => s.main = Some(l),
                    Slot::Base => s.base = Some(l),
                }
                s.loading = None;
                s.error = None;
                s.generation = s.generation.wrapping_add(1);
                ready = r;
                s.combine(ready.as_ref());
                refresh = Refresh::All;
            }
            Action::Failed(e) => {
                s.loading = None;
                s.error = Some(e);
            }
            Action::DismissError => s.error = None,
            Action::ClearBase => {
                s.base = None;
                s.combine(None);
                refresh = Refresh::All;
            }
            Action::SampleType(t) => {
                s.sample = t;
                refresh = Refresh::All;
            }
            Action::Focus(f) => {
                s.focus = f;
                refresh = Refresh::All;
            }
            Action::Ignore(f) => {
                s.ignore = f;
                refresh = Refresh::All;
            }
            Action::Search(q) => s.search = q,
            Action::View(v) => {
                s.view = v;
                if v == View::Top && s.derived.as_ref().is_some_and(|d| d.top.is_none()) {
                    refresh = Refresh::Source;
                }
            }
            Action::Zoom(z) => s.zoom = z,
            Action::Source(f) => {
                s.func = f;
                s.view = View::Source;
                refresh = Refresh::Source;
            }
            Action::FocusFunction(f) => {
                s.focus = format!("^{}$", regex_escape(&f));
                s.zoom.clear();
                s.view = View::Flame;
                refresh = Refresh::All;
            }
            Action::Sort(c) => {
                s.sort = if s.sort.0 == c {
                    (c, !s.sort.1)
                } else {
                    (c, c != SortCol::Name)
                };
            }
            Action::Sources(files) => {
                s.loading = None;
                let mut v = (*s.sources).clone();
                for (name, text) in files {
                    v.retain(|(n, _)| *n != name);
                    v.push((name, Rc::from(text)));
                }
                s.sources = ByPtr(Rc::new(v));
            }
            Action::ShowAllRows => s.all_rows = true,
        }
        match refresh {
            Refresh::None => {}
            Refresh::Source => s.refresh_source(),
            Refresh::All => s.refresh(ready.as_ref()),
        }
        Rc::new(s)
    }
}

enum Refresh {
    None,
    Source,
    All,
}

impl State {
    /// Sets `shown` from `main` and `base`, and indexes it (unless `ready` has).
    fn combine(&mut self, ready: Option<&Ready>) {
        let shown = match (&self.main, &self.base) {
            (Some(m), Some(b)) => match profile::diff(&b.profile, &m.profile) {
                Ok(d) => Some(Rc::new(d)),
                Err(e) => {
                    self.error = Some(format!(
                        "cannot compare {} against base {}: {e}",
                        m.name, b.name
                    ));
                    self.base = None;
                    Some(m.profile.clone())
                }
            },
            (Some(m), None) => Some(m.profile.clone()),
            _ => None,
        };
        self.shown = shown.map(|p| match ready {
            Some(r) if std::ptr::eq(&*r.index.profile, &*p) => ByPtr(r.index.clone()),
            _ => {
                let ix = Index::shared(p);
                crate::perf::mark("indexed");
                ByPtr(Rc::new(ix))
            }
        });
    }

    /// Recomputes everything the views show (the flame tree taken from `ready` when it
    /// is the one asked for).
    pub fn refresh(&mut self, ready: Option<&Ready>) {
        let Some(ix) = self.shown.clone() else {
            self.derived = None;
            return;
        };
        let p = &ix.profile;
        // (None chosen, "", is no type: the default, as is a type the profile lacks.)
        let si = p
            .sample_index(&self.sample)
            .unwrap_or_else(|_| p.default_sample_index());
        let (filter, filter_error) = match crate::regex::filter(&self.focus, &self.ignore) {
            Ok(f) => (f, None),
            Err(e) => (Filter::none(), Some(e.to_string())),
        };
        // Values past 64-bit sums: the clear error, not wrapped figures (every sum
        // below is exact once the total fits).
        let total = match ix.total(si) {
            Ok(t) => t,
            Err(e) => {
                self.error = Some(e.to_string());
                self.derived = None;
                return;
            }
        };
        let top = (self.view == View::Top)
            .then(|| ix.top(si, &filter).ok())
            .flatten()
            .map(|t| ByPtr(Rc::new(t)));
        let kept = ix.kept(&filter);
        let shown = (0..ix.sample_count())
            .filter(|&i| kept[i])
            .fold(0i64, |a, i| a.wrapping_add(ix.value(i, si)));
        let flame = match ready {
            Some(r)
                if Rc::ptr_eq(&r.index, &ix.0)
                    && r.sample_index == si
                    && filter.focus.is_none()
                    && filter.ignore.is_none() =>
            {
                ByPtr(r.flame.clone())
            }
            _ => {
                let flame = ByPtr(Rc::new(ix.flame(si, &filter)));
                crate::perf::mark("flame-built");
                flame
            }
        };
        let source = self.source_of(&ix, si, &filter);
        self.derived = Some(Rc::new(Derived {
            sample_index: si,
            unit: p
                .sample_type
                .get(si)
                .map(|t| p.str(t.unit).to_owned())
                .unwrap_or_default(),
            top,
            total,
            shown,
            flame,
            source,
            comments: p.comments().into_iter().map(str::to_owned).collect(),
            filter_error,
            samples: p.sample.len(),
        }));
    }

    /// Recomputes the source view, and the top table if it is shown but missing.
    fn refresh_source(&mut self) {
        let (Some(ix), Some(d)) = (self.shown.clone(), self.derived.clone()) else {
            return;
        };
        let filter = crate::regex::filter(&self.focus, &self.ignore).unwrap_or_default();
        let source = self.source_of(&ix, d.sample_index, &filter);
        let top = match (&d.top, self.view) {
            (None, View::Top) => ix
                .top(d.sample_index, &filter)
                .ok()
                .map(|t| ByPtr(Rc::new(t))),
            (t, _) => t.clone(),
        };
        self.derived = Some(Rc::new(Derived {
            top,
            source,
            ..(*d).clone()
        }));
    }

    fn source_of(&self, ix: &Index<'_>, si: usize, filter: &Filter) -> Option<ByPtr<SourceTable>> {
        if self.func.is_empty() {
            return None;
        }
        ix.node_of(&self.func)
            .map(|n| ByPtr(Rc::new(ix.source(n, si, filter))))
    }

    /// The sample type shown, once a profile is.
    pub fn sample_type(&self) -> Option<&str> {
        let (ix, d) = (self.shown.as_ref()?, self.derived.as_ref()?);
        let t = ix.profile.sample_type.get(d.sample_index)?;
        Some(ix.profile.str(t.r#type))
    }

    /// Name of the sample type shown, or asked for (for the URL).
    pub fn sample_name(&self) -> String {
        self.sample_type()
            .map_or_else(|| self.sample.clone(), str::to_owned)
    }
}

/// Escapes regex metacharacters so a function name matches itself literally: the
/// characters whose escapes both RE2 and the browser's `RegExp` (`u` flag) accept.
pub fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
