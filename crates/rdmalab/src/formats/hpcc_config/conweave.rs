//! The ConWeave dialect of the config file: the keys that the ConWeave artifact's ns-3
//! (conweave-project/conweave-ns3 at 236a801, `scratch/network-load-balance.cc`, "the main
//! program") reads beyond the reference's, and the reference's keys it does not read
//! (docs/hpcc-dialects.md, "The conweave dialect", cites the line of each).
//!
//! The fork reads its config with `conf >> v`: unsigned keys take their integer part, as in
//! the m4 dialect (`m4::integer_part`). It skips a key it does not know; here such a key is
//! refused by name, as in the other dialects.

use std::path::PathBuf;

use super::m4::integer_part;
use super::{HpccConfig, Reader};
use crate::error::Result;
use crate::units::Time;

/// The reference's keys that the fork's config loop does not read (rdmalab's own keys are
/// refused in every fork's dialect): it would skip the key and misread its value as the next key.
pub(super) const NOT_READ: &[&str] = &[
    "TRACE_FILE",
    "TRACE_OUTPUT_FILE",
    "SIMULATOR_STOP_TIME",
    "ACK_HIGH_PRIO",
    "ENABLE_TRACE",
    "PINT_LOG_BASE",
    "PINT_PROB",
];

/// The files of the fork's periodic monitors and logs, which the dialect does not write
/// (`conweave_files`): key and path.
pub type MonitorFile = (&'static str, PathBuf);

/// The fork's own settings, at its defaults (the initial values of the main program's
/// globals, lines 58 to 148).
#[derive(Clone, Debug, PartialEq)]
pub struct ConweaveKeys {
    /// `LB_MODE`: 0 ECMP, 2 DRILL, 3 CONGA, 6 LetFlow, 9 ConWeave (line 58: default 0).
    pub lb_mode: u64,
    /// `ENABLE_PFC` (integer part, nonzero = on); default on (line 82).
    pub enable_pfc: bool,
    /// `ENABLE_IRN`: IRN's loss recovery at the NICs; default off (line 147).
    pub enable_irn: bool,
    /// `CONWEAVE_TX_EXPIRY_TIME` (µs); default 1,000 (line 74).
    pub tx_expiry: Time,
    /// `CONWEAVE_REPLY_TIMEOUT_EXTRA` (µs); default 4 (line 72).
    pub reply_extra: Time,
    /// `CONWEAVE_PATH_PAUSE_TIME` (µs); default 8 (line 73).
    pub path_pause: Time,
    /// `CONWEAVE_EXTRA_VOQ_FLUSH_TIME` (µs); default 32 (line 75).
    pub extra_voq_flush: Time,
    /// `CONWEAVE_DEFAULT_VOQ_WAITING_TIME` (µs); default 500 (line 76).
    pub default_voq_wait: Time,
    /// `FLOWGEN_START_TIME` (s): the base of `LINK_DOWN`'s time; default 2.0 (line 85).
    pub flowgen_start: Time,
    /// `FLOWGEN_STOP_TIME` (s): the run ends 10 s after it; default 2.5 (line 85).
    pub flowgen_stop: Time,
    /// `RANDOM_SEED`; default 1 (line 148).
    pub random_seed: u64,
    /// `LOAD`: printed by the fork, used for nothing; default 10 (line 146).
    pub load: f64,
    /// `SW_MONITORING_INTERVAL` (ns): the period of the monitors; default 10,000 (line 90).
    pub sw_monitoring_interval_ns: u64,
    /// The files of the fork's monitors that a config names (`FLOW_INPUT_FILE`,
    /// `CNP_OUTPUT_FILE`, `EST_ERROR_MON_FILE`, `VOQ_MON_FILE`, `VOQ_MON_DETAIL_FILE`,
    /// `UPLINK_MON_FILE`, `CONN_MON_FILE`).
    pub monitor_files: Vec<MonitorFile>,
}

impl Default for ConweaveKeys {
    fn default() -> ConweaveKeys {
        ConweaveKeys {
            lb_mode: 0,
            enable_pfc: true,
            enable_irn: false,
            tx_expiry: Time::from_us(1_000),
            reply_extra: Time::from_us(4),
            path_pause: Time::from_us(8),
            extra_voq_flush: Time::from_us(32),
            default_voq_wait: Time::from_us(500),
            flowgen_start: Time::from_ms(2_000),
            flowgen_stop: Time::from_ms(2_500),
            random_seed: 1,
            load: 10.0,
            sw_monitoring_interval_ns: 10_000,
            monitor_files: Vec::new(),
        }
    }
}

/// Reads the value of a key of the ConWeave dialect that the reference does not read
/// the same way; false for any other key.
pub(super) fn set_conweave_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &'static str) -> Result<bool> {
    let us = |r: &mut Reader<'_>| -> Result<Time> {
        let v = integer_part(r, key)?;
        v.checked_mul(1_000_000).map(Time).ok_or_else(|| r.err(r.peek_line(), key, format!("{v} µs is too large")))
    };
    let m = &mut c.conweave;
    match key {
        "LB_MODE" => m.lb_mode = integer_part(r, key)?,
        "ENABLE_PFC" => m.enable_pfc = integer_part(r, key)? != 0,
        "ENABLE_IRN" => m.enable_irn = super::values::flag(r, key)?,
        "CONWEAVE_TX_EXPIRY_TIME" => m.tx_expiry = us(r)?,
        "CONWEAVE_REPLY_TIMEOUT_EXTRA" => m.reply_extra = us(r)?,
        "CONWEAVE_PATH_PAUSE_TIME" => m.path_pause = us(r)?,
        "CONWEAVE_EXTRA_VOQ_FLUSH_TIME" => m.extra_voq_flush = us(r)?,
        "CONWEAVE_DEFAULT_VOQ_WAITING_TIME" => m.default_voq_wait = us(r)?,
        "FLOWGEN_START_TIME" => m.flowgen_start = super::values::time_value(r, key, 12)?,
        "FLOWGEN_STOP_TIME" => m.flowgen_stop = super::values::time_value(r, key, 12)?,
        "RANDOM_SEED" => m.random_seed = integer_part(r, key)?,
        "LOAD" => m.load = super::values::float(r, key)?,
        "SW_MONITORING_INTERVAL" => m.sw_monitoring_interval_ns = integer_part(r, key)?,
        // Read into `uint64_t` and used for nothing (the fork's queue monitor is compiled
        // out): `run.py` writes seconds (`2.0`), whose integer part the fork takes.
        "QLEN_MON_START" => c.qlen_mon_start = Time::from_ns(integer_part(r, key)?),
        "QLEN_MON_END" => c.qlen_mon_end = Time::from_ns(integer_part(r, key)?),
        "FLOW_INPUT_FILE"
        | "CNP_OUTPUT_FILE"
        | "EST_ERROR_MON_FILE"
        | "VOQ_MON_FILE"
        | "VOQ_MON_DETAIL_FILE"
        | "UPLINK_MON_FILE"
        | "CONN_MON_FILE" => {
            let p = super::values::path_value(r, key)?;
            m.monitor_files.push((key, p));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::super::{parse_config_as, Dialect};
    use super::*;
    use std::path::Path;

    #[test]
    fn reads_the_forks_keys_in_its_units() {
        let text = "LB_MODE 9\nCONWEAVE_TX_EXPIRY_TIME 300\nCONWEAVE_PATH_PAUSE_TIME 16\nENABLE_PFC 0\nENABLE_IRN 1\n\
                    FLOWGEN_START_TIME 2.0\nFLOWGEN_STOP_TIME 2.1\nBUFFER_SIZE 9\nVOQ_MON_FILE mix/v.txt\n";
        let c = parse_config_as(text, Path::new("c.txt"), Dialect::Conweave).unwrap();
        let m = &c.conweave;
        assert_eq!((m.lb_mode, m.enable_pfc, m.enable_irn), (9, false, true));
        assert_eq!(
            (m.tx_expiry, m.path_pause, m.reply_extra),
            (Time::from_us(300), Time::from_us(16), Time::from_us(4))
        );
        assert_eq!(m.flowgen_stop, Time::from_ms(2_100));
        assert_eq!(
            c.buffer_bytes(),
            9 * 1024 * 1024,
            "MB as in the reference (main program: buffer_size * 1024 * 1024)"
        );
        assert_eq!(m.monitor_files, vec![("VOQ_MON_FILE", PathBuf::from("mix/v.txt"))]);
    }

    #[test]
    fn its_keys_decide_the_dialect_before_m4s() {
        // ENABLE_PFC is read by both forks; a key only the artifact reads decides.
        assert_eq!(Dialect::detect("ENABLE_PFC 1\nLB_MODE 9\n"), (Dialect::Conweave, Some(("LB_MODE", 2))));
        assert_eq!(Dialect::detect("ENABLE_PFC 1\n"), (Dialect::M4, Some(("ENABLE_PFC", 1))));
    }

    #[test]
    fn refuses_keys_the_fork_does_not_read() {
        for key in ["ACK_HIGH_PRIO 1", "SIMULATOR_STOP_TIME 3", "ENABLE_TRACE 0", "IOFD_ENABLE 1", "FIXED_WIN 100"] {
            let text = format!("LB_MODE 0\n{key}\n");
            let e = parse_config_as(&text, Path::new("c.txt"), Dialect::Conweave).unwrap_err().to_string();
            let name = key.split(' ').next().unwrap();
            assert!(e.contains(&format!("c.txt:2: field `{name}`")) && e.contains("conweave dialect"), "{e}");
        }
    }
}
