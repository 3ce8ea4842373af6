//! Every error of a scenario as `Error::Input` naming the file, the line and the full field
//! path (`traffic[0].flows[2].size`): for parse errors (syntax, types, unknown keys) and for
//! the errors found while building (bad values, unknown hosts, impossible topologies).

use std::path::Path;

use super::source_map::{join, SourceMap};
use crate::error::Error;

/// A TOML parse or type error, located with the document's spans.
pub(super) fn toml_error(e: serde_path_to_error::Error<toml::de::Error>, text: &str, file: &Path) -> Error {
    let at = e.path().to_string();
    let inner = e.into_inner();
    let span_line = inner.span().map_or(0, |s| 1 + text[..s.start.min(text.len())].matches('\n').count());
    let msg = plain(inner.message().trim());
    let map = SourceMap::parse(text);
    if map.is_empty() {
        // Not valid TOML at all: the parser's position is all there is.
        return Error::input(file, span_line, key_on_line(text, span_line), msg);
    }
    de_error(&clean_path(&at), &msg, span_line, file, &map)
}

/// A JSON parse or type error (a scenario built in Python). No line: the JSON is ours.
pub(super) fn json_error(e: serde_path_to_error::Error<serde_json::Error>, text: &str, file: &Path) -> Error {
    let at = e.path().to_string();
    let full = e.into_inner().to_string();
    // serde_json appends the position in its own text, which the user never wrote.
    let msg = plain(full.rsplit_once(" at line ").map_or(full.as_str(), |(m, _)| m));
    de_error(&clean_path(&at), &msg, 0, file, &SourceMap::from_json(text))
}

/// serde names an untagged enum by its Rust type when no form fits; say which forms the
/// field takes instead.
fn plain(msg: &str) -> String {
    let Some(ty) = msg.strip_prefix("data did not match any variant of untagged enum ") else {
        return msg.to_string();
    };
    let forms = match ty.trim() {
        "NumOrRange" => "a positive number, or a range [lo, hi] of two numbers",
        "OneOrMany" => "one value, or a list with one value per item",
        "WeightsSpec" => "\"probe\", \"equal\", or a list with one weight per QP",
        "RanksSpec" => "a list of hosts, or { hosts = \"a..b\" }",
        "SizeSpec" => "a number of bytes, or a size with its unit (\"64MiB\")",
        _ => return msg.to_string(),
    };
    format!("expected {forms}")
}

/// An error the engine found after parsing (`Error::Scenario`, named by the engine's own
/// field: `queue_sample_interval`, `trace.max_bytes`, `threads`) as an input error of the
/// scenario file at `path` whose text is `text`: the field as the file writes it
/// (`fabric.queue_sample_interval`) and its line. Other errors pass through.
pub fn in_scenario_file(e: Error, text: &str, path: &Path) -> Error {
    in_source(e, path, || SourceMap::parse(text))
}

/// The same for a JSON scenario (one built in Python), `text` being its JSON: the error
/// names `<python scenario>` and the full field, with no line (the JSON is machine-written).
pub fn in_python_scenario(e: Error, text: &str) -> Error {
    in_source(e, Path::new(super::JSON_SOURCE), || SourceMap::from_json(text))
}

fn in_source(e: Error, path: &Path, map: impl FnOnce() -> SourceMap) -> Error {
    let Error::Scenario { field, msg } = e else { return e };
    let map = map();
    let full = [field.clone(), format!("fabric.{field}")].into_iter().find(|f| map.has(f));
    match full {
        Some(f) => Error::input(path, map.line(&f), f, msg),
        None => Error::Scenario { field, msg },
    }
}

/// Fills in the line of a build error that names a field of `file` but no line yet.
pub(super) fn with_line(e: Error, file: &Path, map: impl FnOnce() -> SourceMap) -> Error {
    match e {
        Error::Input { mut loc, msg } if loc.file == file && loc.line == 0 => {
            loc.line = map().line(&loc.field);
            Error::Input { loc, msg }
        }
        other => other,
    }
}

/// Names the complaint of a topology builder or a traffic generator (`fat_tree.k`,
/// `poisson.load`, which know nothing of the scenario) by the scenario field it comes from
/// (`topology.k`, `traffic[2].load`).
pub(super) fn in_section(e: Error, file: &Path, section: &str) -> Error {
    match e {
        Error::Scenario { field, msg } => {
            let key = field.rsplit('.').next().unwrap_or(&field);
            Error::input(file, 0, join(section, key), msg)
        }
        Error::Topology(msg) => Error::input(file, 0, section, msg),
        other => other,
    }
}

/// A file the scenario names but that cannot be read, reported at the field naming it (the
/// file's own content errors already name that file and their line, and pass through).
pub(super) fn unreadable(e: Error, file: &Path, field: &str) -> Error {
    match e {
        Error::Io { path, source } => Error::input(file, 0, field, format!("cannot read {}: {source}", path.display())),
        other => other,
    }
}

/// serde_path_to_error writes the root as `.`.
fn clean_path(p: &str) -> String {
    if p == "." {
        String::new()
    } else {
        p.to_string()
    }
}

/// serde's messages name the culprit: an unknown or missing key, or the offending value.
/// Internally tagged tables hide where inside them it sits, so look for that key or value
/// below the reported path.
fn de_error(at: &str, msg: &str, span_line: usize, file: &Path, map: &SourceMap) -> Error {
    let or_span = |line: usize| if line > 0 { line } else { span_line };
    let (field, line) = if let Some(key) = between(msg, "unknown field `", "`") {
        // Outside tagged tables the path already ends at the unknown key.
        let named = at == key || at.ends_with(&format!(".{key}"));
        let f = if named { at.to_string() } else { join(at, key) };
        let line = or_span(map.line(&f));
        (f, line)
    } else if let Some(key) = between(msg, "missing field `", "`") {
        (join(at, key), or_span(map.line(at)))
    } else if let Some((f, line)) = literal(msg).and_then(|lit| map.find_literal(at, lit)) {
        (f.to_string(), or_span(line))
    } else {
        (at.to_string(), or_span(map.line(at)))
    };
    Error::input(file, line, field, msg)
}

fn between<'a>(msg: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = msg.split_once(start)?.1;
    Some(rest.split_once(end)?.0)
}

/// The value a serde message quotes: `string "x"`, or anything else between backticks.
fn literal(msg: &str) -> Option<&str> {
    if let Some((_, rest)) = msg.split_once("string \"") {
        return rest.split_once("\", expected").or_else(|| rest.rsplit_once('"')).map(|(s, _)| s);
    }
    between(msg, "`", "`")
}

/// The key assigned (or the table opened) on `line`, for syntax errors; on a line that is
/// neither, its text (cut to 40 characters), so that the error always names something.
fn key_on_line(text: &str, line: usize) -> String {
    let l = text.lines().nth(line.saturating_sub(1)).unwrap_or("").trim();
    let key = match l.strip_prefix('[') {
        Some(header) => header.trim_matches(['[', ']', ' ']),
        None => l.split_once('=').map_or(l, |(k, _)| k.trim()),
    };
    let key = if key.is_empty() { l } else { key };
    if key.is_empty() {
        "(end of file)".to_string()
    } else if l.starts_with('[') {
        key.chars().take(40).collect()
    } else {
        join(&enclosing_table(text, line), &key.chars().take(40).collect::<String>())
    }
}

/// The table a line sits in: the last `[name]` above it, or `name[i]` for the i-th
/// `[[name]]`; empty at the top.
fn enclosing_table(text: &str, line: usize) -> String {
    let above: Vec<&str> = text.lines().take(line.saturating_sub(1)).map(str::trim).collect();
    let Some(header) = above.iter().rev().find(|l| l.starts_with('[')) else { return String::new() };
    let name = header.trim_start_matches('[').split(']').next().unwrap_or("").trim();
    if header.starts_with("[[") {
        let count = above
            .iter()
            .filter(|l| l.starts_with("[[") && l.trim_start_matches('[').split(']').next().map(str::trim) == Some(name))
            .count();
        format!("{name}[{}]", count - 1)
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_read_from_serde_messages() {
        assert_eq!(literal("invalid type: string \"four\", expected usize"), Some("four"));
        assert_eq!(literal("invalid value: integer `-5`, expected u64"), Some("-5"));
        assert_eq!(literal("unknown variant `fat_tre`, expected one of `star`"), Some("fat_tre"));
        assert_eq!(literal("invalid type: sequence, expected a string"), None);
    }

    #[test]
    fn syntax_errors_name_the_key_on_their_line() {
        let text = "seed = 1\n[topology\nk = = 3\n";
        assert_eq!(key_on_line(text, 2), "topology");
        assert_eq!(key_on_line(text, 3), "topology.k");
        assert_eq!(key_on_line(text, 9), "(end of file)");
        assert_eq!(key_on_line("kind \"star\"\n", 1), "kind \"star\"");
        let text = "seed = 1\n[trace]\nmax_bytes = 1e\n[[app]]\nx = 1\n[[app]]\nsize = = 2\n";
        assert_eq!(key_on_line(text, 3), "trace.max_bytes");
        assert_eq!(key_on_line(text, 7), "app[1].size");
    }
}
