//! Where each value of a TOML scenario sits, by field path (`topology.k`,
//! `traffic[0].flows[1].size`), so that a problem found after parsing (a value out of range,
//! an unknown host, an inconsistent pair of settings) names its line like a syntax error.
//!
//! serde's internally tagged enums (`[topology] kind = ...`, `[[traffic]] kind = ...`) buffer
//! their table before choosing the variant, which drops the spans and the inner path of any
//! error inside them. The map is therefore read separately, from the same text, with the
//! `toml` crate's spans.

use std::collections::HashMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Line and literal of every value in a TOML document, by field path.
#[derive(Debug, Default)]
pub(super) struct SourceMap {
    /// Path → (1-based line of the value's first character, the value as serde's messages
    /// print it; empty for tables and arrays). In document order.
    entries: Vec<(String, usize, String)>,
    index: HashMap<String, usize>,
}

/// A parsed value with the spans of its parts.
enum Node {
    Table(Vec<(String, Located)>),
    Array(Vec<Located>),
    Leaf(String),
}

impl SourceMap {
    /// The map of `text`; empty when `text` is not valid TOML (the parser reports that).
    pub(super) fn parse(text: &str) -> SourceMap {
        let mut map = SourceMap::default();
        if let Ok(root) = toml::from_str::<Node>(text) {
            let starts: Vec<usize> = line_starts(text);
            map.add_children("", &root, &starts);
        }
        map
    }

    fn add_children(&mut self, path: &str, node: &Node, starts: &[usize]) {
        match node {
            Node::Table(items) => {
                for (key, value) in items {
                    self.add(join(path, key), value, starts);
                }
            }
            Node::Array(items) => {
                for (i, value) in items.iter().enumerate() {
                    self.add(format!("{path}[{i}]"), value, starts);
                }
            }
            Node::Leaf(_) => {}
        }
    }

    fn add(&mut self, path: String, value: &Located, starts: &[usize]) {
        // A table the document only implies (`[a.b]` with no `[a]`) has no line of its own;
        // its fields do.
        if let Some(start) = value.start {
            let line = 1 + starts.partition_point(|&s| s <= start);
            let literal = match &value.node {
                Node::Leaf(l) => l.clone(),
                _ => String::new(),
            };
            self.push(path.clone(), line, literal);
        }
        self.add_children(&path, &value.node, starts);
    }

    fn push(&mut self, path: String, line: usize, literal: String) {
        self.index.insert(path.clone(), self.entries.len());
        self.entries.push((path, line, literal));
    }

    /// The map of a JSON scenario (what Python sends): paths and literals, no lines, since
    /// the JSON is machine-written and its lines mean nothing to the user.
    pub(super) fn from_json(text: &str) -> SourceMap {
        let mut map = SourceMap::default();
        if let Ok(root) = serde_json::from_str::<serde_json::Value>(text) {
            map.add_json("", &root);
        }
        map
    }

    fn add_json(&mut self, path: &str, value: &serde_json::Value) {
        use serde_json::Value;
        let children: Vec<(String, &Value)> = match value {
            Value::Object(m) => m.iter().map(|(k, v)| (join(path, k), v)).collect(),
            Value::Array(a) => a.iter().enumerate().map(|(i, v)| (format!("{path}[{i}]"), v)).collect(),
            _ => return,
        };
        for (child, v) in children {
            let literal = match v {
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                    (Some(i), _, _) => i.to_string(),
                    (_, Some(u), _) => u.to_string(),
                    (_, _, Some(f)) => float_literal(f),
                    _ => n.to_string(),
                },
                Value::String(s) => s.clone(),
                _ => String::new(),
            };
            self.push(child.clone(), 0, literal);
            self.add_json(&child, v);
        }
    }

    /// True when nothing was read (the text was not valid TOML).
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when the document writes `field` itself.
    pub(super) fn has(&self, field: &str) -> bool {
        self.index.contains_key(field)
    }

    /// The line of `field`, or of its nearest enclosing table or array that the document
    /// has (a missing field points at its table); 0 when none is known.
    pub(super) fn line(&self, field: &str) -> usize {
        let mut path = field;
        loop {
            if let Some(&i) = self.index.get(path) {
                return self.entries[i].1;
            }
            match path.rfind(['.', '[']) {
                Some(cut) => path = &path[..cut],
                None => return 0,
            }
        }
    }

    /// The first field at or below `prefix` (all fields when empty) whose value prints as
    /// `literal`, with its line: how a type error inside a tagged table is pinned to its key.
    pub(super) fn find_literal(&self, prefix: &str, literal: &str) -> Option<(&str, usize)> {
        let below = |p: &str| {
            prefix.is_empty()
                || p.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        self.entries
            .iter()
            .find(|(p, _, l)| !l.is_empty() && l == literal && below(p))
            .map(|(p, n, _)| (p.as_str(), *n))
    }
}

/// `path.key`, or `key` at the top.
pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A float as serde's messages print it: always with a decimal point or exponent.
fn float_literal(v: f64) -> String {
    let s = v.to_string();
    let point = v.is_finite() && !s.contains(['.', 'e', 'E']);
    if point {
        format!("{s}.0")
    } else {
        s
    }
}

/// Byte offsets at which lines 2, 3, ... begin; a position's line is one plus the number of
/// these at or before it.
fn line_starts(text: &str) -> Vec<usize> {
    text.match_indices('\n').map(|(i, _)| i + 1).collect()
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

/// The `toml` crate hands a date-time over as a one-entry table under this key.
const DATETIME_KEY: &str = "$__toml_private_datetime";

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }

    // Leaves print as serde's `Unexpected` does in "invalid type/value" messages, so a
    // literal quoted in such a message can be looked up.
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Leaf(v.to_string()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Leaf(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Leaf(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Leaf(float_literal(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Leaf(v.to_string()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element::<Located>()? {
            items.push(v);
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let first = map.next_key::<String>()?;
        table(first, map)
    }
}

/// The rest of a table whose first key (if any) has been read.
fn table<'de, A: MapAccess<'de>>(mut key: Option<String>, mut map: A) -> Result<Node, A::Error> {
    let mut items = Vec::new();
    while let Some(k) = key {
        if k == DATETIME_KEY {
            map.next_value::<IgnoredAny>()?;
            return Ok(Node::Leaf(String::new()));
        }
        items.push((k, map.next_value::<Located>()?));
        key = map.next_key::<String>()?;
    }
    Ok(Node::Table(items))
}

/// A value and the byte offset where it starts: `toml::Spanned<Node>`, except that a table
/// the document only implies (`[[fabric.classes]]` with no `[fabric]`) has no span, on which
/// `Spanned` fails and this gives `None`.
struct Located {
    start: Option<usize>,
    node: Node,
}

/// The `toml` crate's span protocol (serde_spanned 0.6, what `toml::Spanned` asks for): a
/// struct of these fields, which the deserializer fills with the value's span when it has
/// one, and otherwise answers with the value itself.
const SPANNED: &str = "$__serde_spanned_private_Spanned";
const SPANNED_FIELDS: [&str; 3] =
    ["$__serde_spanned_private_start", "$__serde_spanned_private_end", "$__serde_spanned_private_value"];

impl<'de> Deserialize<'de> for Located {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Located, D::Error> {
        d.deserialize_struct(SPANNED, &SPANNED_FIELDS, LocatedVisitor)
    }
}

struct LocatedVisitor;

impl<'de> Visitor<'de> for LocatedVisitor {
    type Value = Located;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Located, A::Error> {
        let first = map.next_key::<String>()?;
        if first.as_deref() != Some(SPANNED_FIELDS[0]) {
            return Ok(Located { start: None, node: table(first, map)? });
        }
        let start: usize = map.next_value()?;
        map.next_key::<IgnoredAny>()?;
        map.next_value::<IgnoredAny>()?; // the end
        map.next_key::<IgnoredAny>()?;
        Ok(Located { start: Some(start), node: map.next_value()? })
    }
    // Anything else without a span (not seen from the `toml` crate, but harmless).
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Located, E> {
        NodeVisitor.visit_bool(v).map(|node| Located { start: None, node })
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Located, E> {
        NodeVisitor.visit_i64(v).map(|node| Located { start: None, node })
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Located, E> {
        NodeVisitor.visit_u64(v).map(|node| Located { start: None, node })
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Located, E> {
        NodeVisitor.visit_f64(v).map(|node| Located { start: None, node })
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Located, E> {
        NodeVisitor.visit_str(v).map(|node| Located { start: None, node })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Located, A::Error> {
        NodeVisitor.visit_seq(seq).map(|node| Located { start: None, node })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "seed = 3\n\n[topology]\nkind = \"star\"\nhosts = 4\n\n[[traffic]]\nkind = \"flows\"\nflows = [\n  { src = 1, dst = 2, size = -5 },\n  { src = 2, dst = 1, size = 1.5 },\n]\n";

    #[test]
    fn fields_map_to_their_lines() {
        let m = SourceMap::parse(TEXT);
        assert_eq!(m.line("seed"), 1);
        assert_eq!(m.line("topology.hosts"), 5);
        assert_eq!(m.line("traffic[0].flows[1].dst"), 11);
        // A missing field points at its table; an unknown path at nothing.
        assert_eq!(m.line("topology.rate"), m.line("topology"));
        assert_eq!((m.line("topology"), m.line("traffic[0]"), m.line("traffic[0].flows")), (3, 7, 9));
        assert_eq!(m.line("nothing.here"), 0);
    }

    #[test]
    fn literals_are_found_below_a_prefix() {
        let m = SourceMap::parse(TEXT);
        assert_eq!(m.find_literal("traffic[0]", "-5"), Some(("traffic[0].flows[0].size", 10)));
        assert_eq!(m.find_literal("traffic[0]", "1.5"), Some(("traffic[0].flows[1].size", 11)));
        assert_eq!(m.find_literal("topology", "star"), Some(("topology.kind", 4)));
        assert_eq!(m.find_literal("topology", "-5"), None);
        assert_eq!(m.find_literal("", "4"), Some(("topology.hosts", 5)));
    }

    #[test]
    fn fields_of_implied_tables_have_lines() {
        // `[fabric]` never written: the table is implied by the headers below it.
        let m = SourceMap::parse("seed = 1\n[fabric.iofd]\npaths = \"x\"\n[[fabric.classes]]\npg = 2\n");
        assert_eq!((m.line("fabric.iofd.paths"), m.line("fabric.classes[0].pg")), (3, 5));
        assert_eq!(m.line("fabric.classes[0]"), 4);
        assert_eq!(m.line("fabric.mtu"), 0, "an implied table has no line of its own");
        assert_eq!(m.find_literal("fabric", "2"), Some(("fabric.classes[0].pg", 5)));
    }

    #[test]
    fn invalid_toml_gives_an_empty_map() {
        assert_eq!(SourceMap::parse("[topology\nk = 3").line("topology.k"), 0);
    }
}
