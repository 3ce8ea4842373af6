//! A whitespace tokenizer that remembers line numbers, and the number parsers the readers
//! share.
//!
//! The ns-3 HPCC simulator reads its inputs with C++ `>>`, so any whitespace separates
//! tokens and line layout does not matter. Our errors must still name a line, so every
//! token carries the 1-based line it started on. Whitespace is C's `isspace` set (space,
//! `\t`, `\n`, `\v`, `\f`, `\r`), which also makes CRLF files read the same as LF files.

use std::path::Path;

use crate::error::{Error, Result};

/// One whitespace-delimited token and the line it is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    /// 1-based line number.
    pub line: usize,
    /// The token text (never empty, never contains whitespace).
    pub text: &'a str,
}

/// C's `isspace` on one byte.
pub(crate) const fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Yields the tokens of a text in order, with their line numbers.
#[derive(Clone, Debug)]
pub(crate) struct Tokens<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    last_line: usize,
}

impl<'a> Tokens<'a> {
    /// Tokens of `text`, starting on line 1.
    pub(crate) fn new(text: &'a str) -> Tokens<'a> {
        Tokens { text, pos: 0, line: 1, last_line: 1 }
    }

    /// The line of the last token returned (1 before the first): where a truncated file
    /// is reported.
    pub(crate) fn last_line(&self) -> usize {
        self.last_line
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            if !is_space(b) {
                break;
            }
            if b == b'\n' {
                self.line += 1;
            }
            self.pos += 1;
        }
        let start = self.pos;
        while bytes.get(self.pos).is_some_and(|&b| !is_space(b)) {
            self.pos += 1;
        }
        // Whitespace bytes are ASCII, so both ends are char boundaries.
        let text = self.text.get(start..self.pos).filter(|t| !t.is_empty())?;
        self.last_line = self.line;
        Some(Token { line: self.line, text })
    }
}

/// A token as shown in an error message: escaped, and cut to 40 characters.
pub(crate) fn show(tok: &str) -> String {
    let mut s: String = tok.chars().take(40).flat_map(char::escape_debug).collect();
    if tok.chars().nth(40).is_some() {
        s.push_str("...");
    }
    s
}

/// The text of the file at `path`; a failed read is an [`Error::Io`] naming the file.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// The whitespace-separated fields of one line (C's `isspace` set, as [`Tokens`] splits).
pub(crate) fn line_fields(raw: &str) -> Vec<&str> {
    raw.split(|c: char| c.is_ascii() && is_space(c as u8)).filter(|t| !t.is_empty()).collect()
}

/// Parses a file of one record per line, each with exactly the fields named in `fields`,
/// skipping blank lines. A line with another count of fields is an error naming the first
/// field it lacks (the last field when it has too many); `parse` reads a full line, given
/// its fields and its 1-based number.
pub(crate) fn parse_fixed_lines<T>(
    text: &str,
    path: &Path,
    fields: &[&str],
    mut parse: impl FnMut(&[&str], usize) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        let toks = line_fields(raw);
        if toks.is_empty() {
            continue;
        }
        if toks.len() != fields.len() {
            let field = fields.get(toks.len()).or(fields.last()).copied().unwrap_or("?");
            let msg = format!("expected {} fields ({}), found {}", fields.len(), fields.join(" "), toks.len());
            return Err(Error::input(path, line, field, msg));
        }
        out.push(parse(&toks, line)?);
    }
    Ok(out)
}

/// A non-negative decimal integer (optional leading `+`, as C++ `>>` accepts).
pub(crate) fn parse_u64(tok: &str) -> std::result::Result<u64, String> {
    let digits = tok.strip_prefix('+').unwrap_or(tok);
    if tok.starts_with('-') {
        return Err(format!("`{}` is negative", show(tok)));
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{}` is not a non-negative integer", show(tok)));
    }
    digits.parse::<u64>().map_err(|_| format!("`{}` is too large", show(tok)))
}

/// A finite, non-negative decimal floating-point number (`inf`, `nan` and hex are refused).
pub(crate) fn parse_f64(tok: &str) -> std::result::Result<f64, String> {
    if tok.starts_with('-') {
        return Err(format!("`{}` is negative", show(tok)));
    }
    let plain = tok.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    match tok.parse::<f64>() {
        Ok(v) if plain && v.is_finite() => Ok(v),
        _ => Err(format!("`{}` is not a finite decimal number", show(tok))),
    }
}

/// Reads tokens of one file and turns problems into [`Error::Input`] naming the file, the
/// line and the field.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    toks: Tokens<'a>,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    /// A reader over `text`, which came from `path`.
    pub(crate) fn new(text: &'a str, path: &'a Path) -> Reader<'a> {
        Reader { toks: Tokens::new(text), path }
    }

    /// An input error at `line` about `field`.
    pub(crate) fn err(&self, line: usize, field: &str, msg: impl Into<String>) -> Error {
        Error::input(self.path, line, field, msg)
    }

    /// The line of the next token (of the last one when the file has ended).
    pub(crate) fn peek_line(&self) -> usize {
        self.toks.clone().next().map_or(self.toks.last_line(), |t| t.line)
    }

    /// The next token, if any.
    pub(crate) fn next_opt(&mut self) -> Option<Token<'a>> {
        self.toks.next()
    }

    /// The next token; an error naming `field` when the file ends first.
    pub(crate) fn next(&mut self, field: &str, context: &str) -> Result<Token<'a>> {
        match self.toks.next() {
            Some(t) => Ok(t),
            None => Err(self.err(self.toks.last_line(), field, format!("file ends before {context}: truncated file"))),
        }
    }

    /// The next token as a non-negative integer.
    pub(crate) fn u64(&mut self, field: &str, context: &str) -> Result<(u64, usize)> {
        let t = self.next(field, context)?;
        parse_u64(t.text).map(|v| (v, t.line)).map_err(|m| self.err(t.line, field, m))
    }

    /// The next token as a non-negative integer no larger than `max`.
    pub(crate) fn u64_max(&mut self, field: &str, context: &str, max: u64) -> Result<(u64, usize)> {
        let (v, line) = self.u64(field, context)?;
        if v > max {
            return Err(self.err(line, field, format!("{v} is larger than the maximum {max}")));
        }
        Ok((v, line))
    }

    /// Checks that the record about to be read, `what` with the fields named in `names`
    /// (space-separated), has exactly that many fields on its line. The reference reads any
    /// layout, but its files hold one record per line; a missing or extra field would
    /// otherwise shift every later field and be reported on another line, about another
    /// field. Nothing to check when the file has ended (the field reads report that).
    pub(crate) fn check_record(&self, what: &str, names: &str) -> Result<()> {
        let mut look = self.toks.clone();
        let Some(first) = look.next() else {
            return Ok(());
        };
        let names: Vec<&str> = names.split(' ').collect();
        let found = 1 + look.take_while(|t| t.line == first.line).count();
        let expected = format!("{} field(s) expected: {}", names.len(), names.join(" "));
        if found < names.len() {
            let msg = format!("{what} has {found} field(s) on this line, {expected}; `{}` is missing", names[found]);
            return Err(self.err(first.line, names[found], msg));
        }
        if found > names.len() {
            let last = names[names.len() - 1];
            let msg =
                format!("{what} has {found} field(s) on this line, {expected}; the fields after `{last}` are extra");
            return Err(self.err(first.line, last, msg));
        }
        Ok(())
    }

    /// The next token as a finite non-negative float.
    pub(crate) fn f64(&mut self, field: &str, context: &str) -> Result<(f64, usize)> {
        let t = self.next(field, context)?;
        parse_f64(t.text).map(|v| (v, t.line)).map_err(|m| self.err(t.line, field, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_lines_across_any_whitespace() {
        let toks: Vec<_> = Tokens::new("a b\r\n\n c\td\x0b e\n").map(|t| (t.line, t.text)).collect();
        assert_eq!(toks, vec![(1, "a"), (1, "b"), (3, "c"), (3, "d"), (3, "e")]);
    }

    #[test]
    fn integers_refuse_signs_and_junk() {
        assert_eq!(parse_u64("+12"), Ok(12));
        assert!(parse_u64("-1").unwrap_err().contains("negative"));
        assert!(parse_u64("1x").is_err());
        assert!(parse_u64("99999999999999999999999").unwrap_err().contains("too large"));
        assert!(parse_f64("nan").is_err());
        assert!(parse_f64("inf").is_err());
        assert!(parse_f64("1e999").is_err());
        assert_eq!(parse_f64("0.000000"), Ok(0.0));
    }

    #[test]
    fn records_must_have_their_fields_on_one_line() {
        let p = Path::new("f");
        let r = Reader::new("1 2 3\n4 5 6\n", p);
        assert!(r.check_record("record 1", "a b c").is_ok());
        let e = Reader::new("1 2\n3 4 5\n", p).check_record("record 1", "a b c").unwrap_err().to_string();
        assert!(e.contains("f:1: field `c`") && e.contains("has 2 field(s)") && e.contains("`c` is missing"), "{e}");
        let e = Reader::new("\n\n1 2 3 4\n", p).check_record("record 1", "a b c").unwrap_err().to_string();
        assert!(e.contains("f:3: field `c`") && e.contains("has 4 field(s)") && e.contains("extra"), "{e}");
        assert!(Reader::new("  \n", p).check_record("record 1", "a b c").is_ok());
    }

    #[test]
    fn show_escapes_and_cuts() {
        assert_eq!(show("a\u{0}"), "a\\0");
        assert_eq!(show(&"x".repeat(50)), format!("{}...", "x".repeat(40)));
    }
}
