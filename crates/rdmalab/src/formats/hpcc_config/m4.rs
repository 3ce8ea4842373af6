//! The m4/Unison dialect of the config file: the keys that netiken/m4's ns-3 (on Unison,
//! `testbed/backends/UNISON/`, the simulator behind m3's and m4's training data) reads
//! beyond the reference's, and the values it reads differently (docs/hpcc-dialects.md
//! cites the fork's lines for each).
//!
//! The fork reads most of its keys with `conf >> v` into an unsigned integer. Given
//! `BUFFER_SIZE 126.15` it takes 126 and then reads `.15` as the next key, which it does
//! not know and skips: the integer part counts, the rest is dropped. The readers here do
//! the same for those keys, and refuse a value that does not start with a digit (where the
//! fork's stream would fail and every later key be lost).

use super::{HpccConfig, Reader};
use crate::error::Result;
use crate::units::Rate;

/// Which simulator's files a config is written for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// alibaba-edu/High-Precision-Congestion-Control, the reference.
    #[default]
    Reference,
    /// netiken/m4's ns-3 on Unison (m3/m4's published scenarios).
    M4,
    /// SimAI's ns-3 backend (aliyun/SimAI's `astra-sim-alibabacloud`): its network config,
    /// with the topology and workload given beside it (`hpcc_compat::simai`).
    Simai,
    /// The ConWeave artifact's ns-3 (conweave-project/conweave-ns3), `conweave.rs`.
    Conweave,
}

impl Dialect {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Reference => "reference",
            Dialect::M4 => "m4",
            Dialect::Simai => "simai",
            Dialect::Conweave => "conweave",
        }
    }

    /// From a name: `reference`, `m4`, `simai` or `conweave`.
    /// supported yet, and says so.
    pub fn from_name(name: &str) -> std::result::Result<Dialect, String> {
        match name {
            "reference" => Ok(Dialect::Reference),
            "m4" => Ok(Dialect::M4),
            "simai" => Ok(Dialect::Simai),
            "conweave" => Ok(Dialect::Conweave),
            _ => Err(format!(
                "unknown dialect `{name}`: rdmalab hpcc runs the reference, m4, simai and conweave dialects"
            )),
        }
    }

    /// The dialect a config's text is written in, with the key and line that say so: the
    /// ConWeave artifact's or SimAI's when a key only that fork reads is present (the
    /// ConWeave artifact shares `ENABLE_PFC` with m4), else m4 when any of m4's own keys is,
    /// else the reference.
    pub fn detect(text: &str) -> (Dialect, Option<(&'static str, usize)>) {
        let mut m4 = None;
        for t in crate::formats::tokens::Tokens::new(text) {
            if let Some(k) = CONWEAVE_KEYS.iter().copied().find(|k| *k == t.text) {
                return (Dialect::Conweave, Some((k, t.line)));
            }
            if m4.is_none() {
                m4 = M4_KEYS.iter().copied().find(|k| *k == t.text).map(|k| (k, t.line));
            }
            if let Some(k) = super::simai::SIMAI_KEYS.iter().copied().find(|k| *k == t.text) {
                return (Dialect::Simai, Some((k, t.line)));
            }
        }
        match m4 {
            Some(why) => (Dialect::M4, Some(why)),
            None => (Dialect::Reference, None),
        }
    }
}

/// The keys the m4 fork reads that the reference does not know.
pub const M4_KEYS: &[&str] = &[
    "ENABLE_PFC",
    "MAX_RATE",
    "TIMELY_T_HIGH",
    "TIMELY_T_LOW",
    "TIMELY_BETA",
    "FIXED_WIN",
    "BASE_RTT",
    "MAX_INFLIGHT_FLOWS",
    "N_CLIENTS_PER_RACK_FOR_CLOSED_LOOP",
];

/// Keys only the ConWeave artifact's simulator reads (conweave-project/conweave-ns3 at
/// 236a801, `scratch/network-load-balance.cc`, lines 744 to 1080 of its config loop, and the
/// template of its `run.py`): a config with one of them is that artifact's (`conweave.rs`).
pub const CONWEAVE_KEYS: &[&str] = &[
    "FLOW_INPUT_FILE",
    "CNP_OUTPUT_FILE",
    "EST_ERROR_MON_FILE",
    "LB_MODE",
    "SW_MONITORING_INTERVAL",
    "CONWEAVE_TX_EXPIRY_TIME",
    "CONWEAVE_REPLY_TIMEOUT_EXTRA",
    "CONWEAVE_EXTRA_VOQ_FLUSH_TIME",
    "CONWEAVE_PATH_PAUSE_TIME",
    "CONWEAVE_DEFAULT_VOQ_WAITING_TIME",
    "FLOWGEN_START_TIME",
    "FLOWGEN_STOP_TIME",
    "VOQ_MON_FILE",
    "VOQ_MON_DETAIL_FILE",
    "UPLINK_MON_FILE",
    "CONN_MON_FILE",
    "LOAD",
    "ENABLE_IRN",
    "RANDOM_SEED",
];

/// The m4 fork's own settings, at the fork's defaults (the initial values of its globals).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct M4Keys {
    /// `ENABLE_PFC` (integer part, nonzero = on); default on.
    pub enable_pfc: bool,
    /// `MAX_RATE` (DataRate): a QP's starting and highest rate is min(NIC rate, this); default 10 Gb/s.
    pub max_rate: Rate,
    /// `TIMELY_T_HIGH` (ns, integer part); default 500,000.
    pub timely_t_high_ns: u64,
    /// `TIMELY_T_LOW` (ns, integer part); default 50,000.
    pub timely_t_low_ns: u64,
    /// `TIMELY_BETA`; default 0.8.
    pub timely_beta: f64,
    /// `FIXED_WIN` (bytes, integer part): every QP's window under `HAS_WIN`; default 0.
    pub fixed_win: u64,
    /// `BASE_RTT` (ns): read, then replaced by the topology's largest 2 × path delay, as the fork does.
    pub base_rtt_ns: u64,
    /// `MAX_INFLIGHT_FLOWS`; default 0, which the fork turns into 1,000,000 (open loop).
    pub max_inflight_flows: u64,
    /// `N_CLIENTS_PER_RACK_FOR_CLOSED_LOOP`; default 1.
    pub n_clients_per_rack: u64,
    /// `BUFFER_SIZE` in the fork's unit, KiB (integer part); default 16.
    pub buffer_kib: u64,
}

impl Default for M4Keys {
    fn default() -> M4Keys {
        M4Keys {
            enable_pfc: true,
            max_rate: Rate::mbps(10_000),
            timely_t_high_ns: 500_000,
            timely_t_low_ns: 50_000,
            timely_beta: 0.8,
            fixed_win: 0,
            base_rtt_ns: 0,
            max_inflight_flows: 0,
            n_clients_per_rack: 1,
            buffer_kib: 16,
        }
    }
}

impl M4Keys {
    /// The switch buffer in bytes: `BUFFER_SIZE` × 1024.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_kib.saturating_mul(1024)
    }
}

/// Reads the value of an m4 key, or of `BUFFER_SIZE` in the m4 dialect; false for any other key.
pub(super) fn set_m4_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &str) -> Result<bool> {
    let m = &mut c.m4;
    match key {
        "ENABLE_PFC" => m.enable_pfc = integer_part(r, key)? != 0,
        "MAX_RATE" => m.max_rate = super::values::rate_value(r, key)?,
        "TIMELY_T_HIGH" => m.timely_t_high_ns = integer_part(r, key)?,
        "TIMELY_T_LOW" => m.timely_t_low_ns = integer_part(r, key)?,
        "TIMELY_BETA" => m.timely_beta = super::values::float(r, key)?,
        "FIXED_WIN" => m.fixed_win = integer_part(r, key)?,
        "BASE_RTT" => m.base_rtt_ns = integer_part(r, key)?,
        "MAX_INFLIGHT_FLOWS" => m.max_inflight_flows = integer_part(r, key)?,
        "N_CLIENTS_PER_RACK_FOR_CLOSED_LOOP" => m.n_clients_per_rack = integer_part(r, key)?,
        "BUFFER_SIZE" => {
            let line = r.peek_line();
            m.buffer_kib = integer_part(r, key)?;
            if m.buffer_kib == 0 {
                return Err(r.err(
                    line,
                    key,
                    "must be at least 1 (KiB, the m4 dialect's unit): a switch needs a buffer",
                ));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A value the fork reads with `conf >> unsigned`: the leading digits (a decimal's fraction
/// is dropped).
pub(super) fn integer_part(r: &mut Reader<'_>, key: &str) -> Result<u64> {
    let t = r.next(key, &format!("the value of {key}"))?;
    let digits = t.text.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &t.text[digits..];
    let frac_ok = rest.is_empty() || (rest.starts_with('.') && rest[1..].bytes().all(|b| b.is_ascii_digit()));
    if digits == 0 || !frac_ok {
        let msg = format!("`{}` is not a non-negative decimal number", crate::formats::tokens::show(t.text));
        return Err(r.err(t.line, key, msg));
    }
    t.text[..digits].parse::<u64>().map_err(|_| r.err(t.line, key, format!("{} is too large", t.text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_detection() {
        assert_eq!(Dialect::from_name("m4"), Ok(Dialect::M4));
        assert_eq!(Dialect::from_name("conweave"), Ok(Dialect::Conweave));
        assert_eq!(Dialect::from_name("simai"), Ok(Dialect::Simai));
        assert!(Dialect::from_name("ns3").unwrap_err().contains("unknown dialect"));
        assert_eq!(Dialect::detect("CC_MODE 1\nBUFFER_SIZE 16\n"), (Dialect::Reference, None));
        assert_eq!(Dialect::detect("CC_MODE 1\n\nENABLE_PFC 1.0\n"), (Dialect::M4, Some(("ENABLE_PFC", 3))));
    }

    #[test]
    fn m4_values_keep_their_integer_part() {
        let text = "BUFFER_SIZE 126.1501585627982\nFIXED_WIN 5290.0\nTIMELY_T_HIGH 120215.83345688184\n\
                    TIMELY_T_LOW 53582.837700567\nENABLE_PFC 0.0\nMAX_RATE 40Gbps\nTIMELY_BETA 0.5\n";
        let c = super::super::parse_config_as(text, std::path::Path::new("c.txt"), Dialect::M4).unwrap();
        assert_eq!(c.m4.buffer_bytes(), 126 * 1024);
        assert_eq!((c.m4.fixed_win, c.m4.timely_t_high_ns, c.m4.timely_t_low_ns), (5290, 120_215, 53_582));
        assert!(!c.m4.enable_pfc);
        assert_eq!((c.m4.max_rate, c.m4.timely_beta), (Rate::gbps(40), 0.5));
        for (bad, msg) in [("FIXED_WIN -3\n", "not a non-negative"), ("BUFFER_SIZE 0.5\n", "at least 1")] {
            let e = super::super::parse_config_as(bad, std::path::Path::new("c.txt"), Dialect::M4).unwrap_err();
            assert!(e.to_string().contains(msg) && e.to_string().contains("c.txt:1"), "{e}");
        }
    }
}
