//! The reducer and the pure helpers, natively (no browser): what each action does to
//! the derived views.

use crate::components::source::match_source;
use crate::state::{regex_escape, Action, Slot, SortCol, State, View};
use heapsnap_profile::profile::{Builder, Line, Profile};
use std::rc::Rc;
use yew::Reducible;

/// main → alloc (100 B) and main → helper → alloc (50 B); types alloc_space, inuse_space.
fn profile(scale: i64) -> Profile {
    let mut b = Builder::new();
    b.sample_type("alloc_space", "bytes");
    b.sample_type("inuse_space", "bytes");
    b.comment("dropped 3 samples");
    let main = b.function("main", "main", "/app/src/main.rs", 1);
    let helper = b.function("app::helper", "", "/app/src/helper.rs", 10);
    let alloc = b.function("alloc::vec::Vec<T>::push", "", "/rustc/alloc/vec.rs", 100);
    let l1 = b.location(
        0,
        1,
        vec![Line {
            function_id: main,
            line: 5,
            column: 0,
        }],
        false,
    );
    let l2 = b.location(
        0,
        2,
        vec![Line {
            function_id: helper,
            line: 12,
            column: 0,
        }],
        false,
    );
    let l3 = b.location(
        0,
        3,
        vec![Line {
            function_id: alloc,
            line: 120,
            column: 0,
        }],
        false,
    );
    b.sample(vec![l3, l1], vec![100 * scale, 10], vec![]);
    b.sample(vec![l3, l2, l1], vec![50, 5 * scale], vec![]);
    b.finish()
}

fn run(s: Rc<State>, a: Action) -> Rc<State> {
    s.reduce(a)
}

fn loaded(slot: Slot, p: Profile) -> Action {
    Action::Loaded {
        slot,
        name: "heap.pb.gz".into(),
        profile: Rc::new(p),
        bytes: 1,
        ready: None,
    }
}

#[test]
fn loading_a_profile_derives_every_view_with_pprofs_default_sample_type() {
    let s = run(Rc::new(State::default()), loaded(Slot::Main, profile(1)));
    let d = s.derived.as_ref().expect("derived");
    assert_eq!(d.sample_index, 1, "no default_sample_type: the last one");
    assert_eq!((d.total, d.shown), (15, 15));
    assert_eq!(d.comments, ["dropped 3 samples"]);
    assert!(d.top.is_none(), "the top table waits until it is shown");
    assert_eq!(d.flame.nodes[0].value, 15);
    assert_eq!(s.generation, 1);
    let s = run(s, Action::View(View::Top));
    let rows = &s
        .derived
        .as_ref()
        .unwrap()
        .top
        .as_ref()
        .expect("top computed when shown")
        .rows;
    assert_eq!(rows[0].name, "alloc::vec::Vec<T>::push");
    let s = run(s, Action::SampleType("alloc_space".into()));
    assert_eq!(s.derived.as_ref().unwrap().total, 150);
    assert_eq!(s.sample_name(), "alloc_space");
}

#[test]
fn filters_sources_sorting_and_errors() {
    let s = run(Rc::new(State::default()), loaded(Slot::Main, profile(1)));
    let s = run(s, Action::FocusFunction("app::helper".into()));
    assert_eq!(s.focus, "^app::helper$");
    assert_eq!(s.view, View::Flame);
    assert_eq!(s.derived.as_ref().unwrap().shown, 5);
    let s = run(s, Action::Focus("(".into()));
    let d = s.derived.as_ref().unwrap();
    assert!(
        d.filter_error.as_deref().unwrap_or("").contains("focus"),
        "{:?}",
        d.filter_error
    );
    assert_eq!(d.shown, 15, "an invalid filter is not applied");
    let s = run(s, Action::Focus(String::new()));
    let s = run(s, Action::Source("app::helper".into()));
    assert_eq!(s.view, View::Source);
    let src = s.derived.as_ref().unwrap().source.as_ref().expect("source");
    assert_eq!((src.file.as_str(), src.cum), ("/app/src/helper.rs", 5));
    let s = run(s, Action::Sort(SortCol::Cum));
    assert_eq!(s.sort, (SortCol::Cum, true));
    let s = run(s, Action::Sort(SortCol::Cum));
    assert_eq!(s.sort, (SortCol::Cum, false));
    let s = run(s, Action::Failed("x is not a usable pprof profile".into()));
    assert!(
        s.error.is_some() && s.derived.is_some(),
        "an error keeps the loaded profile"
    );
    let s = run(s, loaded(Slot::Main, profile(1)));
    assert!(s.error.is_none(), "a good file clears the error");
}

#[test]
fn a_base_profile_turns_the_views_into_a_diff() {
    let s = run(Rc::new(State::default()), loaded(Slot::Main, profile(3)));
    let s = run(s, Action::SampleType("inuse_space".into()));
    let s = run(s, loaded(Slot::Base, profile(1)));
    let d = s.derived.as_ref().unwrap();
    assert!(d.flame.diff);
    // new 10 + 15, base 10 + 5: net +10, percentages relative to the base total (15).
    assert_eq!(d.flame.nodes[0].value, 10);
    assert_eq!(d.total, 15);
    let s = run(s, Action::ClearBase);
    assert!(!s.derived.as_ref().unwrap().flame.diff);
}

#[test]
fn dropped_sources_match_by_path_suffix() {
    let files: Vec<(String, Rc<str>)> = vec![
        ("main.rs".into(), Rc::from("a")),
        ("src/main.rs".into(), Rc::from("b")),
        ("ain.rs".into(), Rc::from("c")),
    ];
    assert_eq!(
        &*match_source("/app/src/main.rs", &files).unwrap().1,
        "b",
        "longest suffix wins"
    );
    assert!(
        match_source("/app/src/xmain.rs", &files).is_none(),
        "suffixes match at a / only"
    );
    assert_eq!(regex_escape("a.b(c)*"), "a\\.b\\(c\\)\\*");
    let name = "pkg.(*T).m-1#x&y~[i]{2}|^$";
    let f = crate::regex::filter(&format!("^{}$", regex_escape(name)), "")
        .expect("escaped name compiles");
    assert!(f.focus.unwrap().is_match(name));
}

#[test]
fn leading_re2_flags_become_regexp_flags() {
    use crate::regex::leading_flags;
    assert_eq!(leading_flags("(?i)main\\."), ("main\\.", "ui".to_owned()));
    assert_eq!(leading_flags("(?is)x"), ("x", "uis".to_owned()));
    assert_eq!(leading_flags("(?:a)"), ("(?:a)", "u".to_owned()));
    assert_eq!(leading_flags("(?U)a"), ("(?U)a", "u".to_owned()));
    assert_eq!(leading_flags("a(?i)"), ("a(?i)", "u".to_owned()));
}

#[test]
fn a_bad_filter_expression_is_reported_not_applied() {
    let e = crate::regex::filter("", "(").unwrap_err();
    assert_eq!(e.which, "ignore");
    assert!(e
        .to_string()
        .starts_with("ignore is not a valid regular expression: "));
}

#[test]
fn the_index_is_built_once_per_profile_and_unchanged_views_stay_shared() {
    let s = run(Rc::new(State::default()), loaded(Slot::Main, profile(1)));
    let ix = s.shown.clone().expect("indexed");
    let flame = s.derived.as_ref().unwrap().flame.clone();
    // Opening the top table or a source view recomputes only those.
    let s = run(s, Action::View(View::Top));
    let top = s.derived.as_ref().unwrap().top.clone().expect("top");
    assert!(s.derived.as_ref().unwrap().flame == flame);
    let s = run(s, Action::Source("main".into()));
    let d = s.derived.as_ref().unwrap();
    assert!(d.source.is_some() && d.flame == flame && d.top.as_ref() == Some(&top));
    // A setting no view is computed from keeps everything shown as it is.
    let before = s.derived.clone().unwrap();
    let s = run(s, Action::Search("push".into()));
    assert!(Rc::ptr_eq(s.derived.as_ref().unwrap(), &before));
    // Sample types, filters and views reuse the index; a new profile gets its own.
    let mut s = s;
    for a in [
        Action::SampleType("alloc_space".into()),
        Action::Focus("main".into()),
        Action::Ignore("helper".into()),
        Action::View(View::Flame),
        Action::Source("app::helper".into()),
    ] {
        s = run(s, a);
        assert!(s.shown.as_ref() == Some(&ix));
    }
    assert!(s.derived.as_ref().unwrap().flame != flame);
    let s = run(s, loaded(Slot::Main, profile(1)));
    assert!(s.shown.is_some() && s.shown.as_ref() != Some(&ix));
}

/// Values whose total leaves 64 bits: the clear error, no view of wrapped figures;
/// another sample type of the same profile still shows.
#[test]
fn values_past_64_bits_are_an_error_not_wrapped_views() {
    let mut p = profile(1);
    for s in &mut p.sample {
        s.value[1] = i64::MAX;
    }
    let s = run(Rc::new(State::default()), loaded(Slot::Main, p));
    assert!(s.derived.is_none(), "views of a wrapped total");
    let e = s.error.as_deref().unwrap_or("");
    assert!(
        e.contains("inuse_space values (bytes) add up to 18446744073709551614"),
        "{e}"
    );
    let s = run(s, Action::SampleType("alloc_space".into()));
    assert_eq!(s.derived.as_ref().unwrap().total, 150);
}

/// A profile loaded with its index and flame tree already built (as the page builds
/// them, in slices) shows those, not new ones, with the same figures as one loaded
/// without them.
#[test]
fn a_prepared_profile_is_shown_without_building_again() {
    use heapsnap_profile::analysis::{Filter, Index};
    let p = Rc::new(profile(1));
    let index = Rc::new(Index::shared(p.clone()));
    let sample_index = p.default_sample_index();
    let flame = Rc::new(index.flame(sample_index, &Filter::none()));
    let ready = crate::state::Ready {
        index: index.clone(),
        sample_index,
        flame: flame.clone(),
    };
    let s = run(
        Rc::new(State::default()),
        Action::Loaded {
            slot: Slot::Main,
            name: "heap.pb.gz".into(),
            profile: p,
            bytes: 1,
            ready: Some(ready),
        },
    );
    assert!(
        Rc::ptr_eq(&s.shown.as_ref().unwrap().0, &index),
        "its index"
    );
    let d = s.derived.as_ref().expect("derived");
    assert!(Rc::ptr_eq(&d.flame.0, &flame), "its flame tree");
    let plain = run(Rc::new(State::default()), loaded(Slot::Main, profile(1)));
    let e = plain.derived.as_ref().unwrap();
    assert_eq!(
        (d.total, d.shown, d.sample_index),
        (e.total, e.shown, e.sample_index)
    );
    assert_eq!(*d.flame.0, *e.flame.0);
}
