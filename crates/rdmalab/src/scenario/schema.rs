//! The scenario's JSON Schema, derived from the parser's own structs (`ScenarioSpec` and
//! everything under it): every key the parser accepts, with its type, its allowed values and
//! the field's doc comment as its meaning. `docs/reference/scenario.md` and the schema that
//! editors read (`python/rdmalab/schema/scenario.schema.json`) are generated from it.

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use super::{ScenarioSpec, ThreadsSpec};

/// The schema of a scenario file (JSON Schema draft 7, which taplo and most editors read),
/// as pretty-printed JSON.
pub fn scenario_schema_json() -> String {
    let mut schema = SchemaSettings::draft07().into_generator().into_root_schema_for::<ScenarioSpec>();
    schema.insert("title".into(), "rdmalab scenario".into());
    serde_json::to_string_pretty(&schema).expect("a schema is plain JSON")
}

impl JsonSchema for ThreadsSpec {
    fn schema_name() -> Cow<'static, str> {
        "ThreadsSpec".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A thread count from 1 to 65535, or \"auto\".",
            "anyOf": [
                { "type": "integer", "minimum": 1, "maximum": 65535 },
                { "const": "auto", "description": "The machine's cores capped by the partitions." }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks every object schema and returns `(path, property schema, required)`.
    fn keys(root: &serde_json::Value) -> Vec<(String, serde_json::Value, bool)> {
        fn walk(v: &serde_json::Value, path: &str, out: &mut Vec<(String, serde_json::Value, bool)>) {
            let Some(o) = v.as_object() else { return };
            if let Some(props) = o.get("properties").and_then(|p| p.as_object()) {
                let req: Vec<&str> = o
                    .get("required")
                    .and_then(|r| r.as_array())
                    .map_or(vec![], |r| r.iter().filter_map(|x| x.as_str()).collect());
                for (k, p) in props {
                    out.push((format!("{path}.{k}"), p.clone(), req.contains(&k.as_str())));
                }
            }
            for key in ["oneOf", "anyOf", "allOf"] {
                if let Some(a) = o.get(key).and_then(|a| a.as_array()) {
                    for (i, s) in a.iter().enumerate() {
                        walk(s, &format!("{path}[{i}]"), out);
                    }
                }
            }
        }
        let mut out = vec![];
        walk(root, "", &mut out);
        for (name, d) in root["definitions"].as_object().unwrap() {
            walk(d, name, &mut out);
        }
        out
    }

    #[test]
    fn every_key_has_a_type_and_a_meaning() {
        let root: serde_json::Value = serde_json::from_str(&scenario_schema_json()).unwrap();
        let keys = keys(&root);
        assert!(keys.len() > 200, "{} keys", keys.len());
        for (path, p, _) in &keys {
            let typed = ["type", "$ref", "allOf", "anyOf", "oneOf", "const", "enum"].iter().any(|k| p.get(k).is_some());
            assert!(typed, "{path}: no type in {p}");
            // The tag of a table chosen by `kind` is the only key whose meaning is its table's.
            let described = p.get("description").and_then(|d| d.as_str()).is_some_and(|d| !d.is_empty());
            assert!(described || path.ends_with(".kind"), "{path}: no doc comment in {p}");
        }
    }
}
