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

    /// The default a key's doc comment states (`default 1000`, `default `"1ms"``), as written.
    fn stated_default(root: &serde_json::Value, def: &str, key: &str) -> String {
        let d = root["definitions"][def]["properties"][key]["description"].as_str().unwrap().replace('\n', " ");
        let at = d.find("default").unwrap_or_else(|| panic!("{def}.{key}: no default in {d:?}")) + "default".len();
        let rest = d[at..].trim_start_matches([':', ' ', '`', '"']);
        rest.split(['"', '`', ';', ')', ',', ' ']).next().unwrap().trim_end_matches('.').to_string()
    }

    /// The defaults written in the doc comments (what the reference shows) are the ones the
    /// builders apply: `SimConfig`'s, `LbConfig`'s and `IofdConfig`'s own defaults.
    #[test]
    fn stated_defaults_are_the_builders_defaults() {
        use crate::config::SimConfig;
        use crate::fabric::deflection::IofdConfig;
        use crate::fabric::lb::LbConfig;
        use crate::formats::units_parse::parse_time;
        let root: serde_json::Value = serde_json::from_str(&scenario_schema_json()).unwrap();
        let num = |def: &str, key: &str| -> f64 {
            let s = stated_default(&root, def, key);
            s.parse().unwrap_or_else(|_| panic!("{def}.{key}: default {s:?} is not a number"))
        };
        let time = |def: &str, key: &str| parse_time(&stated_default(&root, def, key)).unwrap();
        let c = SimConfig::default();
        assert_eq!(num("FabricSpec", "mtu"), c.mtu as f64);
        assert_eq!(num("FabricSpec", "buffer_mb") * 1024.0 * 1024.0, c.buffer_bytes as f64);
        assert_eq!(num("FabricSpec", "ack_interval"), c.ack_interval as f64);
        assert_eq!(num("FabricSpec", "ib_vl_buffer"), c.ib_vl_buffer as f64);
        assert_eq!(num("FabricSpec", "dt_alpha"), c.dt_alpha);
        assert_eq!(Some(time("FabricSpec", "rto")), c.rto);
        assert_eq!(time("FabricSpec", "deadlock_timeout"), c.deadlock_timeout);
        let lb = LbConfig::default();
        let lb_nums = [
            ("drill_samples", lb.drill_samples as f64),
            ("drill_memory", lb.drill_memory as f64),
            ("flowlet_table", lb.flowlet_table as f64),
            ("conga_alpha", lb.conga_alpha),
            ("conga_bits", lb.conga_bits as f64),
            ("conweave_table", lb.conweave_table as f64),
            ("conweave_queues", lb.conweave_queues as f64),
        ];
        for (key, v) in lb_nums {
            assert_eq!(num("LbSpec", key), v, "fabric.lb.{key}");
        }
        let lb_times = [
            ("flowlet_timeout", lb.flowlet_timeout),
            ("conga_dre_period", lb.conga_dre_period),
            ("conga_aging", lb.conga_aging),
            ("lb_window", lb.window),
            ("conweave_tx_expiry", lb.conweave_tx_expiry),
            ("conweave_reply_extra", lb.conweave_reply_extra),
            ("conweave_path_pause", lb.conweave_path_pause),
            ("conweave_flush_extra", lb.conweave_flush_extra),
            ("conweave_default_wait", lb.conweave_default_wait),
        ];
        for (key, v) in lb_times {
            assert_eq!(time("LbSpec", key), v, "fabric.lb.{key}");
        }
        let io = IofdConfig::default();
        assert_eq!(num("IofdSpec", "max_deflections"), io.max_deflections as f64);
        assert_eq!(num("IofdSpec", "threshold"), io.threshold as f64);
        assert_eq!(num("IofdSpec", "escape_pg"), io.escape_pg as f64);
        assert_eq!(num("IofdSpec", "resequence_kb") * 1024.0, io.resequence_bytes as f64);
        assert_eq!(time("IofdSpec", "resequence_timeout"), io.resequence_timeout);
    }
}
