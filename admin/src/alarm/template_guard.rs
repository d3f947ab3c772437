//! Bounds on a webhook template's memory (review N8). minijinja's fuel bounds the instructions a
//! template runs, not the size of the values it builds: one `"x" * 100000000` is 100 MB, and a
//! few `~` or `+` of it, a `join` over `range(100000)` or a `{% set %}` block capturing a loop
//! multiply that until the admin is killed — while the template is saved, and again at every
//! delivery after a restart.
//!
//! So a template may not build text larger than its inputs: its tokens are read before it is
//! compiled, and the operators and builtins that multiply text (`*`, `**`, `+`, `~`, `join`,
//! `range`, `indent`, `center`, `replace`, `format`, `wordwrap`, and the capturing blocks
//! `{% set %}…{% endset %}` and `{% filter %}`) are refused with a message naming them. What it
//! writes goes through [`CappedWriter`], which stops the render at [`MAX_BODY_BYTES`]. With
//! both, its memory is bounded by the template's size, the notice's and the body cap, whatever
//! loops it runs (their time is the fuel's).

use minijinja::machinery::{Token, WhitespaceConfig, tokenize};

/// Longest body a template may render; a vendor's webhook takes far less.
pub(super) const MAX_BODY_BYTES: usize = 256 * 1024;

/// Identifiers (filters, functions, block keywords) that build text larger than their input.
const AMPLIFIERS: [&str; 10] =
    ["join", "range", "indent", "center", "replace", "format", "wordwrap", "endset", "endfilter", "repeat"];

/// Why `template` may not be used: the first operator or name that could multiply text.
pub(super) fn refuse_amplifiers(template: &str) -> Result<(), String> {
    #[expect(
        clippy::default_constructed_unit_structs,
        reason = "a unit struct without minijinja's `custom_syntax` feature, a real one with it: `default` builds either"
    )]
    let syntax = minijinja::syntax::SyntaxConfig::default();
    for token in tokenize(template, false, syntax, WhitespaceConfig::default()) {
        // A syntax error is reported by the compiler, with its position.
        let Ok((token, span)) = token else { return Ok(()) };
        let refused = match token {
            Token::Mul | Token::Pow => Some("the `*` and `**` operators"),
            Token::Plus | Token::Tilde => Some("joining text with `+` or `~` (write the parts side by side)"),
            Token::Ident(name) if AMPLIFIERS.contains(&name) => Some(name),
            _ => None,
        };
        if let Some(what) = refused {
            return Err(format!(
                "line {}: {what} may build text larger than the notice, which templates may not (docs/alarms.md)",
                span.start_line
            ));
        }
    }
    Ok(())
}

/// A writer that takes [`MAX_BODY_BYTES`] and then fails, ending the render.
#[derive(Debug, Default)]
pub(super) struct CappedWriter {
    /// What was written.
    pub(super) bytes: Vec<u8>,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > MAX_BODY_BYTES {
            return Err(std::io::Error::other(format!("the rendered body passed {MAX_BODY_BYTES} bytes")));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_builtins_that_multiply_text_are_refused() {
        for bad in [
            r#"{% set a = "x" * 100000000 %}{{ a }}"#,
            r#"{{ message ~ message }}"#,
            r#"{{ message + message }}"#,
            r#"{{ range(100000)|join(message) }}"#,
            r#"{% set a %}{{ message }}{% endset %}"#,
            r#"{{ message|indent(width=100000000) }}"#,
            r#"{{ "x" ** 3 }}"#,
        ] {
            assert!(refuse_amplifiers(bad).is_err(), "{bad}");
        }
        for good in [
            r#"{"text": {{ text|tojson }}, "folded": {{ folded }}}"#,
            r#"{% if jobId %}job {{ jobId }}{% else %}-{% endif %} {{ message|default("")|upper }}"#,
            r#"{% for node in failedNodes %}{{ node.name|tojson }}{% endfor %}"#,
        ] {
            assert_eq!(refuse_amplifiers(good), Ok(()), "{good}");
        }
    }
}
