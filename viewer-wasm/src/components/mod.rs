//! The page's parts, each rendering what its props say and sending [`Action`]s through
//! `dispatch` (the reducer's own callback: the same one on every render, so props
//! compare equal when nothing they show changed, and yew skips the part).
//!
//! [`Action`]: crate::state::Action

pub mod drop_zone;
pub mod flame;
pub mod source;
pub mod status;
pub mod toolbar;
pub mod top;
