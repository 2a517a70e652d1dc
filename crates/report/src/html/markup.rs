//! Text from a report as the page shows it. Findings and verdicts are written for the
//! terminal, with commands and settings between backticks: on the page those spans are
//! `<code>`, and no backtick is left.

use minijinja::HtmlEscape;

/// `text` as HTML: escaped, each span between a pair of backticks in `<code>`; a backtick
/// without its pair is dropped.
pub fn with_code(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut html = String::with_capacity(text.len() + 16);
    for (index, part) in parts.iter().enumerate() {
        // The parts between the 1st and 2nd backtick, the 3rd and 4th, ...: a last odd part
        // follows a backtick that has no pair.
        let code = index % 2 == 1 && index + 1 < parts.len();
        if code {
            html.push_str("<code>");
        }
        html.push_str(&HtmlEscape(part).to_string());
        if code {
            html.push_str("</code>");
        }
    }
    html
}

/// `text` with its first letter a capital, to stand as a sentence.
pub fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A proof's result for the page: `->` drawn as an arrow.
pub fn arrows(text: &str) -> String {
    text.replace(" -> ", " → ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backticked_spans_become_code_and_no_backtick_is_left() {
        assert_eq!(
            with_code("run `nodelay fix :8080` or <b>`x`"),
            "run <code>nodelay fix :8080</code> or &lt;b&gt;<code>x</code>"
        );
        assert_eq!(with_code("a ` alone"), "a  alone");
        assert_eq!(with_code("`a` and ` b"), "<code>a</code> and  b");
        assert_eq!(sentence("interrupted (Ctrl-C)"), "Interrupted (Ctrl-C)");
    }
}
