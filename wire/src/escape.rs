//! Text Baton did not write itself (a request's ids, an error message that echoes one, a model's
//! words) made safe where it is shown: a log line ([`bounded`]: short and on one line) or a
//! terminal ([`for_terminal`]: no control sequence reaches it). Both escape the same characters.

use std::{borrow::Cow, fmt};

/// How many bytes of one request-taken field a log line keeps; the rest is counted, not written.
pub const MAX_LOGGED_FIELD_BYTES: usize = 256;

/// Whether `c` could steer what shows it rather than be shown: the C0 controls (newlines and
/// tabs too), DEL, the C1 controls (a lone `U+009B` is a CSI to some terminals), the line and
/// paragraph separators, and the bidirectional overrides and isolates, which reorder what a
/// reader sees.
pub fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `value` as a log field: at most [`MAX_LOGGED_FIELD_BYTES`] of it, each control character
/// escaped as `\u{..}` (so one field is one line), and what was cut counted (`…[+N bytes]`).
/// Every log site that writes something a request carried writes it through this.
pub fn bounded(value: &str) -> Bounded<'_> {
    Bounded(value)
}

/// A log field; see [`bounded`].
#[derive(Debug, Clone, Copy)]
pub struct Bounded<'a>(&'a str);

impl fmt::Display for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (at, c) in self.0.char_indices() {
            if at + c.len_utf8() > MAX_LOGGED_FIELD_BYTES {
                return write!(f, "…[+{} bytes]", self.0.len() - at);
            }
            write_char(f, c, false)?;
        }
        Ok(())
    }
}

/// `text` as the CLI prints it: every control character escaped as `\u{..}`, except, with
/// `keep_newlines`, the `\n` and `\t` of a model's prose. Text with nothing to escape is
/// borrowed.
pub fn for_terminal(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| escaped(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        // Writing to a String cannot fail.
        let _ = write_char(&mut out, c, keep_newlines);
    }
    Cow::Owned(out)
}

/// JSON text (`serde_json`'s output) with the controls JSON lets through raw (DEL, C1, the
/// separators and bidirectional marks, which can only sit inside its strings) written as
/// `\uXXXX` escapes: the same JSON value, safe to print.
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_control) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        // serde_json escapes the C0 controls itself; what is left is outside the BMP's
        // surrogates, so one `\uXXXX` each.
        if is_control(c) && (c as u32) >= 0x20 {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn escaped(c: char, keep_newlines: bool) -> bool {
    is_control(c) && !(keep_newlines && matches!(c, '\n' | '\t'))
}

fn write_char(out: &mut impl fmt::Write, c: char, keep_newlines: bool) -> fmt::Result {
    if escaped(c, keep_newlines) {
        write!(out, "\\u{{{:x}}}", c as u32)
    } else {
        out.write_char(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_field_is_one_short_line_whatever_it_was() {
        let attack = format!("id\r\n\u{1b}]0;owned\u{7}{}", "x".repeat(9 << 20));
        let logged = bounded(&attack).to_string();
        assert!(
            logged.len() < MAX_LOGGED_FIELD_BYTES * 2,
            "{}",
            logged.len()
        );
        assert!(logged.starts_with("id\\u{d}\\u{a}\\u{1b}]0;owned\\u{7}xxx"));
        assert!(logged.ends_with(&format!(
            "…[+{} bytes]",
            attack.len() - MAX_LOGGED_FIELD_BYTES
        )));
        assert!(!logged.chars().any(is_control), "{logged:?}");
        assert_eq!(bounded("call_1_1").to_string(), "call_1_1");
        // A cut never splits a character.
        let wide = "é".repeat(MAX_LOGGED_FIELD_BYTES);
        assert!(bounded(&wide).to_string().starts_with(&"é".repeat(128)));
    }

    #[test]
    fn the_terminal_sees_no_control_sequence() {
        let text = "hi\u{1b}]0;title\u{7}\u{1b}[2J\r✓ completed\u{9b}31m\u{202e}gnp.exe\n\tok";
        let shown = for_terminal(text, true);
        assert_eq!(
            shown,
            "hi\\u{1b}]0;title\\u{7}\\u{1b}[2J\\u{d}✓ completed\\u{9b}31m\\u{202e}gnp.exe\n\tok"
        );
        assert_eq!(
            for_terminal("a\nb", false),
            "a\\u{a}b",
            "a one-line field keeps one line"
        );
        assert!(matches!(for_terminal("plain ✓", false), Cow::Borrowed(_)));
        let value = serde_json::json!({"text": "\u{1b}[2J\u{9b}\u{7f}\u{202e}"});
        let json = serde_json::to_string(&value).unwrap();
        let shown = json_for_terminal(&json);
        assert!(!shown.chars().any(is_control), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value, "the same JSON value");
    }
}
