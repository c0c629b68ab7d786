//! Focus / ignore / search expressions compiled with the browser's own `RegExp`, so the
//! bundle carries no regex engine (regex-lite was ~30 KB of it). Native builds (the
//! unit tests) use regex-lite, the engine the CLI uses.
//!
//! Syntax: ECMAScript with the `u` flag. What users type for pprof's Go (RE2) syntax
//! means the same: literals, `.`, classes, `\d \w \s \b \p{..}`, anchors, groups,
//! alternation and repetition; a leading `(?i)`, `(?s)`, `(?m)` (or a combination) is
//! turned into the matching `RegExp` flag. RE2-only forms (`(?P<name>…)`, `\A`, `\z`,
//! `[[:alpha:]]`, `(?U)`) are rejected with the browser's message rather than silently
//! meaning something else.

use heapsnap_profile::analysis::{Filter, FilterError, Pattern};

/// The focus / ignore filter of the analysis ("" = none).
pub fn filter(focus: &str, ignore: &str) -> Result<Filter, FilterError> {
    Filter::with(focus, ignore, compile)
}

/// Compiles `re`, or says why it is not a valid regular expression.
#[cfg(target_arch = "wasm32")]
pub fn compile(re: &str) -> Result<Pattern, String> {
    use wasm_bindgen::JsCast;
    let (body, flags) = leading_flags(re);
    let re = JsRegExp::new(body, &flags).map_err(|e| {
        e.dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .unwrap_or_else(|| "invalid regular expression".to_owned())
    })?;
    Ok(Pattern::new(move |s| re.test(s)))
}

/// Compiles `re`, or says why it is not a valid regular expression.
#[cfg(not(target_arch = "wasm32"))]
pub fn compile(re: &str) -> Result<Pattern, String> {
    let re = regex_lite::Regex::new(re).map_err(|e| e.to_string())?;
    Ok(Pattern::new(move |s| re.is_match(s)))
}

/// Splits a leading RE2 flag group (`(?i)`, `(?is)`, …) off `re`: the rest, and the
/// `RegExp` flags (always `u`, code points as RE2 matches them).
#[cfg(any(target_arch = "wasm32", test))]
pub fn leading_flags(re: &str) -> (&str, String) {
    let mut flags = String::from("u");
    if let Some(rest) = re.strip_prefix("(?") {
        if let Some(end) = rest.find(')') {
            let f = &rest[..end];
            if !f.is_empty() && f.chars().all(|c| matches!(c, 'i' | 's' | 'm')) {
                flags.push_str(f);
                return (&rest[end + 1..], flags);
            }
        }
    }
    (re, flags)
}

// js-sys's `RegExp::new` throws (an abort in wasm) on a bad expression; this binding
// catches the `SyntaxError` instead.
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = RegExp)]
    type JsRegExp;
    #[wasm_bindgen(constructor, js_class = "RegExp", catch)]
    fn new(pattern: &str, flags: &str) -> Result<JsRegExp, wasm_bindgen::JsValue>;
    #[wasm_bindgen(method, js_class = "RegExp")]
    fn test(this: &JsRegExp, s: &str) -> bool;
}
