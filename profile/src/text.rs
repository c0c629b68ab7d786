//! Text from a file made safe to show: the one rule the CLI's terminal output and the
//! viewer's page both follow, so a name reads the same in both and neither can be
//! steered by the file.

use std::borrow::Cow;

/// Text from a file (names, types, units, comments, paths), made safe for a terminal:
/// every control character (C0 including ESC, BEL, CR, LF and TAB; DEL; C1 U+0080 to
/// U+009F) shown as a visible escape (`\x1b`, `\n`, `\u{9b}`), as `ls` and
/// `go tool pprof` show them, so a profile cannot clear the screen, set the title or
/// the clipboard, or split a table row. The Unicode bidirectional controls (U+061C,
/// U+200E/F, U+202A to U+202E, U+2066 to U+2069) are escaped too: they reorder what
/// follows them on the line ("Trojan Source"), so a name could make a row read as
/// another. Other characters, any Unicode, are kept; so is the backslash (Windows
/// paths, and pprof prints it as is, which `top` must match), at the price that a name
/// spelled with a literal `\x1b` reads like an escaped one.
pub fn printable(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// [`printable`] for multi-line text made here (a data format shown on a terminal):
/// newlines are kept, every other control character is escaped.
pub fn printable_lines(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let bidi = |c: char| matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let bad = |c: char| (c.is_control() || bidi(c)) && !(keep_newlines && c == '\n');
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            _ if !bad(c) => o.push(c),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x80 => o.push_str(&format!("\\x{:02x}", c as u32)),
            c => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(printable("plain ünïcode → ok"), "plain ünïcode → ok");
        assert_eq!(
            printable("a\x1b]0;title\x07b\r\n\t\x7f\u{9b}2J\u{85}"),
            "a\\x1b]0;title\\x07b\\r\\n\\t\\x7f\\u{9b}2J\\u{85}"
        );
        assert_eq!(printable_lines("a;b 1\nc\x1bd 2\n"), "a;b 1\nc\\x1bd 2\n");
        // Bidirectional overrides and isolates are shown, not obeyed.
        assert_eq!(
            printable("main\u{202e}cod\u{2066}x\u{2069}\u{200f}"),
            "main\\u{202e}cod\\u{2066}x\\u{2069}\\u{200f}"
        );
    }
}
