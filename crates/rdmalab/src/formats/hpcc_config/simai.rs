//! The SimAI dialect of the config file: the network config (`SimAI.conf`) that SimAI's ns-3
//! backend reads in `ReadConf` (aliyun/SimAI at cef83f9,
//! `astra-sim-alibabacloud/astra-sim/network_frontend/ns3/common.h`, lines 460 to 666;
//! docs/hpcc-dialects.md gives the line of each key).
//!
//! SimAI reads most of the reference's keys with the same meaning and unit. It has no
//! `TOPOLOGY_FILE` (the topology comes from its `-n` argument) and no `QLEN_MON_START` or
//! `QLEN_MON_END`; it adds `NIC_TOTAL_PAUSE_TIME` and a set of monitor keys whose monitor
//! its program never schedules (`schedule_monitor` is defined and not called): those are
//! read and have no effect, as in SimAI. Its `SIMULATOR_STOP_TIME` is read and never used
//! either (its main program stops when the workload ends), so any decimal is accepted.

use super::{values, HpccConfig, Reader, KEYS};
use crate::error::Result;
use crate::formats::tokens::Token;

/// The keys SimAI's ns-3 backend reads that the reference does not know: a config with one
/// of them is SimAI's (`Dialect::detect`).
pub const SIMAI_KEYS: &[&str] = &[
    "NIC_TOTAL_PAUSE_TIME",
    "BW_MON_FILE",
    "RATE_MON_FILE",
    "CNP_MON_FILE",
    "MON_START",
    "MON_END",
    "QP_MON_INTERVAL",
    "BW_MON_INTERVAL",
    "QLEN_MON_INTERVAL",
];

/// Keys the reference reads that SimAI does not: refused by name in this dialect.
const NOT_SIMAI: &[(&str, &str)] = &[
    ("TOPOLOGY_FILE", "SimAI takes its topology from the command line (`--topology`, SimAI's `-n`)"),
    ("QLEN_MON_START", "SimAI has no queue monitor window of this name (its MON_START and MON_END are unused)"),
    ("QLEN_MON_END", "SimAI has no queue monitor window of this name (its MON_START and MON_END are unused)"),
];

/// Reads one key of a SimAI config and its value into `c`.
pub(super) fn set_simai_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: Token<'_>) -> Result<()> {
    if let Some((name, why)) = NOT_SIMAI.iter().find(|(k, _)| *k == key.text) {
        return Err(r.err(key.line, name, format!("not a key of SimAI's ns-3 backend: {why}")));
    }
    super::refuse_extension(r, key, super::Dialect::Simai)?;
    if super::M4_KEYS.contains(&key.text) {
        return Err(r.err(key.line, key.text, "a key of the m4 dialect (netiken/m4's ns-3), not a SimAI key"));
    }
    let Some(name) = KEYS.iter().chain(SIMAI_KEYS).copied().find(|k| *k == key.text) else {
        let msg = "unknown config key (SimAI would skip it and read its value as the next key)";
        return Err(r.err(key.line, &crate::formats::tokens::show(key.text), msg));
    };
    if let Some(first) = c.lines.insert(name, key.line) {
        return Err(r.err(key.line, name, format!("key given twice (first on line {first})")));
    }
    match name {
        // Read into a `uint32_t` and handed to every RdmaHw (common.h:590-591, 929-930);
        // rdmalab's hosts do not count their pauses against a budget.
        "NIC_TOTAL_PAUSE_TIME" => {
            let line = r.peek_line();
            if values::u32_value(r, name)? != 0 {
                let msg =
                    "a budget of PFC pauses per NIC, which rdmalab's simai dialect does not model (0 turns it off)";
                return Err(r.err(line, name, msg));
            }
        }
        "BW_MON_FILE" | "RATE_MON_FILE" | "CNP_MON_FILE" => {
            values::path_value(r, name)?;
        }
        "MON_START" | "MON_END" | "QP_MON_INTERVAL" | "BW_MON_INTERVAL" | "QLEN_MON_INTERVAL" => {
            r.u64(name, &values::ctx(name))?;
        }
        // `conf >> simulator_stop_time` (common.h:521-524), then never read: the run ends
        // with the workload (`AstraSimNetwork.cc`, `main`: `Simulator::Run()`).
        "SIMULATOR_STOP_TIME" => {
            values::float(r, name)?;
        }
        // Read (common.h:627-629) and only used by the unscheduled monitor.
        "QLEN_MON_FILE" => {
            values::path_value(r, name)?;
        }
        // Opened and its count read (common.h:697, 703); the flows come from the workload.
        "FLOW_FILE" => {
            values::path_value(r, name)?;
        }
        _ => values::set_key(c, r, name)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{parse_config_as, Dialect};
    use std::path::Path;

    #[test]
    fn simai_keys_detect_and_parse() {
        let text = "CC_MODE 1\nBUFFER_SIZE 32\nMON_START 0\nSIMULATOR_STOP_TIME 40000000000000.00\n";
        assert_eq!(Dialect::detect(text), (Dialect::Simai, Some(("MON_START", 3))));
        let c = parse_config_as(text, Path::new("s.conf"), Dialect::Simai).unwrap();
        assert_eq!(c.buffer_bytes(), 32 * 1024 * 1024);
        assert_eq!(c.line_of("MON_START"), Some(3));
        let cases = [
            ("TOPOLOGY_FILE t.txt\n", "s.conf:1: field `TOPOLOGY_FILE`", "--topology"),
            ("QLEN_MON_START 0\n", "s.conf:1: field `QLEN_MON_START`", "not a key of SimAI"),
            ("NIC_TOTAL_PAUSE_TIME 5\n", "s.conf:1: field `NIC_TOTAL_PAUSE_TIME`", "does not model"),
            ("FIXED_WIN 5\n", "s.conf:1: field `FIXED_WIN`", "m4 dialect"),
            ("FOO 1\n", "s.conf:1: field `FOO`", "unknown config key"),
        ];
        for (t, loc, msg) in cases {
            let e = parse_config_as(t, Path::new("s.conf"), Dialect::Simai).unwrap_err().to_string();
            assert!(e.contains(loc) && e.contains(msg), "{t:?}: {e}");
        }
        // In the reference dialect, a SimAI key names its dialect.
        let e = parse_config_as("BW_MON_FILE b.txt\n", Path::new("c.txt"), Dialect::Reference).unwrap_err();
        assert!(e.to_string().contains("--dialect simai"), "{e}");
    }
}
