//! The page: the components over one reducer ([`State`], yew's `function_todomvc`).
//! Every change goes through an [`Action`]; the components only render.

use crate::components::drop_zone::{welcome, DropZone};
use crate::components::flame::FlameGraph;
use crate::components::source::SourceView;
use crate::components::status::{notices, tabs};
use crate::components::toolbar::Toolbar;
use crate::components::top::TopTable;
use crate::state::{Action, Derived, State, View};
use crate::{hash, load};
use yew::prelude::*;

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(hash::initial_state);
    // The reducer's own dispatch function: the same on every render.
    let dispatch = state.dispatcher().to_callback();
    {
        let d = dispatch.clone();
        use_effect_with((), move |_| load::preload(d));
    }
    use_effect_with(hash::encode(&state), |h| hash::write(h));
    let d = state.derived.as_deref();
    html! {
        <DropZone dispatch={dispatch.clone()}>
            <Toolbar base={state.base.as_ref().map(|b| b.name.clone())}
                profile={state.shown.clone()} sample_index={d.map_or(0, |d| d.sample_index)}
                focus={state.focus.clone()} ignore={state.ignore.clone()} search={state.search.clone()}
                filter_bad={d.is_some_and(|d| d.filter_error.is_some())} dispatch={dispatch.clone()} />
            if let Some(d) = d { {tabs(&state, d, &dispatch)} }
            {notices(&state, &dispatch)}
            <main>{d.map_or_else(welcome, |d| view(&state, d, &dispatch))}</main>
        </DropZone>
    }
}

/// The view chosen.
fn view(s: &State, d: &Derived, dispatch: &Callback<Action>) -> Html {
    match s.view {
        View::Flame => html! {
            <FlameGraph tree={d.flame.clone()} zoom={s.zoom.clone()} search={s.search.clone()}
                unit={d.unit.clone()} total={d.total} generation={s.generation} dispatch={dispatch.clone()} />
        },
        View::Top => match &d.top {
            Some(table) => html! {
                <TopTable table={table.clone()} unit={d.unit.clone()} diff={d.flame.diff} sort={s.sort}
                    selected={s.func.clone()} all_rows={s.all_rows} dispatch={dispatch.clone()} />
            },
            None => html! {},
        },
        View::Source => html! {
            <SourceView source={d.source.clone()} func={s.func.clone()} unit={d.unit.clone()}
                sources={s.sources.clone()} />
        },
    }
}
