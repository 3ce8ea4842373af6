//! Reader of the ns-3 HPCC simulator's config file (`S1_dcqcn_config.txt`, repo
//! `mix/config.txt`; read in `main` of the reference's `simulation/scratch/third.cc`;
//! docs/reference/hpcc-keys.md).
//!
//! The file is a sequence of `KEY value(s)` tokens. The reference skips a key it does not
//! know and then reads that key's value as the next key, silently mis-parsing the rest;
//! here an unknown key is an error naming the key and the line, and so is a key given twice
//! (the reference would keep the last value). Absent keys take the reference's defaults:
//! the initial values of the globals in `simulation/scratch/third.cc` of
//! alibaba-edu/High-Precision-Congestion-Control (commit 4b78df6), which we read for this;
//! each field's doc gives its default and unit. Paths are kept as written: the reference
//! opens them relative to its working directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod conweave;
mod m4;
pub mod simai;
mod values;

use super::tokens::{read_text, show, Reader, Token};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::topology::{NodeKind, Topology};
use crate::units::{Rate, Time};
use values::set_key;

pub use conweave::{ConweaveKeys, MonitorFile};
pub use m4::{Dialect, M4Keys, CONWEAVE_KEYS, M4_KEYS};

/// Congestion-control algorithm selected by `CC_MODE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CcMode {
    /// 0: no congestion control, line rate (rdmalab's extension; the reference has none).
    None,
    /// 1: DCQCN (Mellanox style). The reference's default.
    #[default]
    Dcqcn,
    /// 3: HPCC.
    Hpcc,
    /// 7: TIMELY.
    Timely,
    /// 8: DCTCP.
    Dctcp,
    /// 10: HPCC-PINT.
    HpccPint,
    /// 20: Blitz, DASR over DCQCN (rdmalab's extension, the Blitz poster).
    Blitz,
}

impl CcMode {
    /// From the config's number; `None` for a number the reference does not implement.
    pub fn from_code(code: u64) -> Option<CcMode> {
        match code {
            0 => Some(CcMode::None),
            1 => Some(CcMode::Dcqcn),
            3 => Some(CcMode::Hpcc),
            7 => Some(CcMode::Timely),
            8 => Some(CcMode::Dctcp),
            10 => Some(CcMode::HpccPint),
            20 => Some(CcMode::Blitz),
            _ => None,
        }
    }
    /// The config's number.
    pub fn code(self) -> u32 {
        match self {
            CcMode::None => 0,
            CcMode::Dcqcn => 1,
            CcMode::Hpcc => 3,
            CcMode::Timely => 7,
            CcMode::Dctcp => 8,
            CcMode::HpccPint => 10,
            CcMode::Blitz => 20,
        }
    }
}

/// `LINK_DOWN a b c`: take link b-c down at 2 s + a µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkDown {
    /// Absolute time of the failure (2 s + a µs).
    pub at: Time,
    /// One end.
    pub a: NodeId,
    /// The other end.
    pub b: NodeId,
}

/// Every key the reference's config reader knows, in its order.
pub const KEYS: &[&str] = &[
    "ENABLE_QCN",
    "USE_DYNAMIC_PFC_THRESHOLD",
    "CLAMP_TARGET_RATE",
    "PAUSE_TIME",
    "DATA_RATE",
    "LINK_DELAY",
    "PACKET_PAYLOAD_SIZE",
    "L2_CHUNK_SIZE",
    "L2_ACK_INTERVAL",
    "L2_BACK_TO_ZERO",
    "TOPOLOGY_FILE",
    "FLOW_FILE",
    "TRACE_FILE",
    "TRACE_OUTPUT_FILE",
    "SIMULATOR_STOP_TIME",
    "ALPHA_RESUME_INTERVAL",
    "RP_TIMER",
    "EWMA_GAIN",
    "FAST_RECOVERY_TIMES",
    "RATE_AI",
    "RATE_HAI",
    "ERROR_RATE_PER_LINK",
    "CC_MODE",
    "RATE_DECREASE_INTERVAL",
    "MIN_RATE",
    "FCT_OUTPUT_FILE",
    "HAS_WIN",
    "GLOBAL_T",
    "MI_THRESH",
    "VAR_WIN",
    "FAST_REACT",
    "U_TARGET",
    "INT_MULTI",
    "RATE_BOUND",
    "ACK_HIGH_PRIO",
    "DCTCP_RATE_AI",
    "PFC_OUTPUT_FILE",
    "LINK_DOWN",
    "ENABLE_TRACE",
    "KMAX_MAP",
    "KMIN_MAP",
    "PMAX_MAP",
    "BUFFER_SIZE",
    "QLEN_MON_FILE",
    "QLEN_MON_START",
    "QLEN_MON_END",
    "MULTI_RATE",
    "SAMPLE_FEEDBACK",
    "PINT_LOG_BASE",
    "PINT_PROB",
];

/// rdmalab's own keys (Blitz's), which the reference knows none of and only the reference
/// dialect reads: every fork's dialect refuses them by name.
pub const EXTENSION_KEYS: &[&str] = &[
    "DASR_UTILIZATION",
    "DASR_COUNT",
    "DASR_EDGE_ECN",
    "IOFD_ENABLE",
    "IOFD_MAX_DEFLECTIONS",
    "IOFD_THRESHOLD",
    "IOFD_NONMINIMAL",
    "IOFD_RESEQ_KB",
];

/// A parsed config file. Field docs give the key, the unit and the default when absent.
#[derive(Clone, Debug, PartialEq)]
pub struct HpccConfig {
    /// The file the config came from (for error messages of the `check_*` helpers).
    pub path: PathBuf,
    /// `TOPOLOGY_FILE`; default none (the reference would fail to open "").
    pub topology_file: Option<PathBuf>,
    /// `FLOW_FILE`; default none.
    pub flow_file: Option<PathBuf>,
    /// `TRACE_FILE` (count + node ids to trace); default none.
    pub trace_file: Option<PathBuf>,
    /// `TRACE_OUTPUT_FILE`; default none.
    pub trace_output_file: Option<PathBuf>,
    /// `FCT_OUTPUT_FILE`; default `fct.txt`.
    pub fct_output_file: PathBuf,
    /// `PFC_OUTPUT_FILE`; default `pfc.txt`.
    pub pfc_output_file: PathBuf,
    /// `QLEN_MON_FILE`; default none.
    pub qlen_mon_file: Option<PathBuf>,
    /// `QLEN_MON_START` (ns, absolute); default 2,000,000,000 ns.
    pub qlen_mon_start: Time,
    /// `QLEN_MON_END` (ns, absolute); default 2,100,000,000 ns.
    pub qlen_mon_end: Time,
    /// `SIMULATOR_STOP_TIME` (s, absolute); default 3.01 s.
    pub simulator_stop_time: Time,
    /// `CC_MODE`; default 1 (DCQCN).
    pub cc_mode: CcMode,
    /// `ALPHA_RESUME_INTERVAL` (µs); default 55 µs.
    pub alpha_resume_interval: Time,
    /// `RATE_DECREASE_INTERVAL` (µs); default 4 µs.
    pub rate_decrease_interval: Time,
    /// `CLAMP_TARGET_RATE` (0/1); default false.
    pub clamp_target_rate: bool,
    /// `RP_TIMER` (µs); default 0 (an uninitialised global in the reference).
    pub rp_timer: Time,
    /// `EWMA_GAIN` (DCQCN g); default 0.0: the reference writes `1 / 16`, an integer division.
    pub ewma_gain: f64,
    /// `FAST_RECOVERY_TIMES`; default 5.
    pub fast_recovery_times: u32,
    /// `RATE_AI` (DataRate); default none (the reference passes "" to ns-3, which aborts).
    pub rate_ai: Option<Rate>,
    /// `RATE_HAI` (DataRate); default none, as `rate_ai`.
    pub rate_hai: Option<Rate>,
    /// `MIN_RATE` (DataRate); default 100 Mb/s.
    pub min_rate: Rate,
    /// `DCTCP_RATE_AI` (DataRate); default 1000 Mb/s.
    pub dctcp_rate_ai: Rate,
    /// `ERROR_RATE_PER_LINK` (loss probability); default 0.
    pub error_rate_per_link: f64,
    /// `L2_CHUNK_SIZE` (bytes); default 0.
    pub l2_chunk_size: u32,
    /// `L2_ACK_INTERVAL` (packets); default 0.
    pub l2_ack_interval: u32,
    /// `L2_BACK_TO_ZERO` (0/1); default false (go-back-N).
    pub l2_back_to_zero: bool,
    /// `HAS_WIN` (nonzero = window-limited); default true.
    pub has_win: bool,
    /// `GLOBAL_T`: true iff the value is 1, as the reference tests `global_t == 1`; default true.
    pub global_t: bool,
    /// `VAR_WIN` (0/1); default false.
    pub var_win: bool,
    /// `FAST_REACT` (0/1); default true.
    pub fast_react: bool,
    /// `U_TARGET` (HPCC eta); default 0.95.
    pub u_target: f64,
    /// `MI_THRESH` (HPCC maxStage); default 5.
    pub mi_thresh: u32,
    /// `INT_MULTI` (INT field unit multiplier); default 1.
    pub int_multi: u32,
    /// `MULTI_RATE` (0/1); default true.
    pub multi_rate: bool,
    /// `SAMPLE_FEEDBACK` (0/1); default false.
    pub sample_feedback: bool,
    /// `PINT_LOG_BASE`; default 1.05.
    pub pint_log_base: f64,
    /// `PINT_PROB`; default 1.0.
    pub pint_prob: f64,
    /// `RATE_BOUND` (0/1); default true.
    pub rate_bound: bool,
    /// `ACK_HIGH_PRIO` (nonzero = ACKs in queue 0); default false (queue 3).
    pub ack_high_prio: bool,
    /// `LINK_DOWN a b c`; `None` when a = 0, as the reference schedules nothing then. Default none.
    pub link_down: Option<LinkDown>,
    /// `ENABLE_TRACE` (nonzero = on); default true.
    pub enable_trace: bool,
    /// `KMAX_MAP`: port rate → ECN kmax in KB (×1000 bytes); default empty.
    pub kmax_map: BTreeMap<Rate, u32>,
    /// `KMIN_MAP`: port rate → ECN kmin in KB (×1000 bytes); default empty.
    pub kmin_map: BTreeMap<Rate, u32>,
    /// `PMAX_MAP`: port rate → marking probability at kmax; default empty.
    pub pmax_map: BTreeMap<Rate, f64>,
    /// `BUFFER_SIZE` (MB = 2^20 bytes, per switch); default 16.
    pub buffer_size_mb: u32,
    /// `PACKET_PAYLOAD_SIZE` (bytes, at least 1); default 1000.
    pub packet_payload_size: u32,
    /// `ENABLE_QCN` (0/1, ECN marking at switches); default true.
    pub enable_qcn: bool,
    /// `USE_DYNAMIC_PFC_THRESHOLD` (0/1); default true.
    pub use_dynamic_pfc_threshold: bool,
    /// `PAUSE_TIME` (QbbNetDevice attribute, not used by the model); default 5.
    pub pause_time: f64,
    /// `DATA_RATE` (read but unused by the reference); default none.
    pub data_rate: Option<Rate>,
    /// `LINK_DELAY` (read but unused by the reference); default none.
    pub link_delay: Option<Time>,
    /// `DASR_UTILIZATION` (CC_MODE 20 only): fraction of the receiver's rate shared; default 1.
    pub dasr_utilization: f64,
    /// `DASR_COUNT` (CC_MODE 20 only): 0 counts QPs, 1 sending hosts; default 0.
    pub dasr_count: u32,
    /// `DASR_EDGE_ECN` (CC_MODE 20 only, 0/1): mark at host-facing ports; default 0.
    pub dasr_edge_ecn: bool,
    /// `IOFD_ENABLE` (0/1, any mode): in-order flow deflection at switches; default 0.
    pub iofd_enable: bool,
    /// `IOFD_MAX_DEFLECTIONS`: deflections per packet; default 2.
    pub iofd_max_deflections: u32,
    /// `IOFD_THRESHOLD` (bytes; 0 = each port's KMIN); default 0.
    pub iofd_threshold: u64,
    /// `IOFD_NONMINIMAL` (0/1): also deflect off the minimal paths; default 0.
    pub iofd_nonminimal: bool,
    /// `IOFD_RESEQ_KB` (KiB): last-hop re-sequencing buffer; default 1024.
    pub iofd_reseq_kb: u32,
    /// The simulator the file is written for (`parse_config_as`); default the reference.
    pub dialect: Dialect,
    /// The m4 dialect's own keys (and its `BUFFER_SIZE`); their defaults otherwise.
    pub m4: M4Keys,
    /// The ConWeave dialect's own keys; their defaults otherwise.
    pub conweave: ConweaveKeys,
    /// Line of each key given in the file.
    lines: BTreeMap<&'static str, usize>,
}

impl Default for HpccConfig {
    fn default() -> HpccConfig {
        HpccConfig::with_defaults(Path::new("<memory>"))
    }
}

impl HpccConfig {
    /// A config with every key at the reference's default, said to come from `path`.
    pub fn with_defaults(path: &Path) -> HpccConfig {
        HpccConfig {
            path: path.to_path_buf(),
            topology_file: None,
            flow_file: None,
            trace_file: None,
            trace_output_file: None,
            fct_output_file: PathBuf::from("fct.txt"),
            pfc_output_file: PathBuf::from("pfc.txt"),
            qlen_mon_file: None,
            qlen_mon_start: Time::from_ns(2_000_000_000),
            qlen_mon_end: Time::from_ns(2_100_000_000),
            simulator_stop_time: Time::from_ms(3_010),
            cc_mode: CcMode::Dcqcn,
            alpha_resume_interval: Time::from_us(55),
            rate_decrease_interval: Time::from_us(4),
            clamp_target_rate: false,
            rp_timer: Time::ZERO,
            ewma_gain: 0.0,
            fast_recovery_times: 5,
            rate_ai: None,
            rate_hai: None,
            min_rate: Rate::mbps(100),
            dctcp_rate_ai: Rate::mbps(1000),
            error_rate_per_link: 0.0,
            l2_chunk_size: 0,
            l2_ack_interval: 0,
            l2_back_to_zero: false,
            has_win: true,
            global_t: true,
            var_win: false,
            fast_react: true,
            u_target: 0.95,
            mi_thresh: 5,
            int_multi: 1,
            multi_rate: true,
            sample_feedback: false,
            pint_log_base: 1.05,
            pint_prob: 1.0,
            rate_bound: true,
            ack_high_prio: false,
            link_down: None,
            enable_trace: true,
            kmax_map: BTreeMap::new(),
            kmin_map: BTreeMap::new(),
            pmax_map: BTreeMap::new(),
            buffer_size_mb: 16,
            packet_payload_size: 1000,
            enable_qcn: true,
            use_dynamic_pfc_threshold: true,
            pause_time: 5.0,
            data_rate: None,
            link_delay: None,
            dasr_utilization: 1.0,
            dasr_count: 0,
            dasr_edge_ecn: false,
            iofd_enable: false,
            iofd_max_deflections: 2,
            iofd_threshold: 0,
            iofd_nonminimal: false,
            iofd_reseq_kb: 1024,
            dialect: Dialect::Reference,
            m4: M4Keys::default(),
            conweave: ConweaveKeys::default(),
            lines: BTreeMap::new(),
        }
    }

    /// The line `key` was given on, or `None` when it was absent.
    pub fn line_of(&self, key: &str) -> Option<usize> {
        self.lines.get(key).copied()
    }

    /// The keys given in the file, with their lines, in key order.
    pub fn keys_given(&self) -> impl Iterator<Item = (&'static str, usize)> + '_ {
        self.lines.iter().map(|(k, l)| (*k, *l))
    }

    /// The switch buffer in bytes (`BUFFER_SIZE` × 2^20).
    pub fn buffer_bytes(&self) -> u64 {
        u64::from(self.buffer_size_mb) * 1024 * 1024
    }

    /// ECN settings of a port of `rate`: (kmin bytes, kmax bytes, pmax), the maps' KB × 1000.
    /// `None` unless all three maps have the rate.
    pub fn ecn_for_rate(&self, rate: Rate) -> Option<(u64, u64, f64)> {
        let kmin = self.kmin_map.get(&rate)?;
        let kmax = self.kmax_map.get(&rate)?;
        let pmax = self.pmax_map.get(&rate)?;
        Some((u64::from(*kmin) * 1000, u64::from(*kmax) * 1000, *pmax))
    }

    /// Errors when the rate of some switch port is missing from `KMIN_MAP`, `KMAX_MAP` or
    /// `PMAX_MAP` (the reference asserts "must set kmin for each link speed"). The error
    /// names the config file, the map's line (none when the map is absent), the map and the rate.
    pub fn check_ecn_maps(&self, topo: &Topology) -> Result<()> {
        for (node_id, node) in topo.nodes.iter().enumerate() {
            if node.kind != NodeKind::Switch {
                continue;
            }
            for p in &node.ports {
                let Some(port) = topo.ports.get(p.idx()) else {
                    continue;
                };
                let Some(link) = topo.links.get(port.link.idx()) else {
                    continue;
                };
                self.check_rate(link.rate, node_id, port.ifindex)?;
            }
        }
        Ok(())
    }

    fn check_rate(&self, rate: Rate, switch: usize, ifindex: u16) -> Result<()> {
        let missing = [
            ("KMIN_MAP", self.kmin_map.contains_key(&rate)),
            ("KMAX_MAP", self.kmax_map.contains_key(&rate)),
            ("PMAX_MAP", self.pmax_map.contains_key(&rate)),
        ];
        match missing.iter().find(|(_, has)| !has) {
            None => Ok(()),
            Some((key, _)) => {
                let line = self.line_of(key).unwrap_or(0);
                let msg =
                    format!("no entry for rate {} bps ({rate}), the rate of port {ifindex} of switch {switch}", rate.0);
                Err(Error::input(&self.path, line, *key, msg))
            }
        }
    }
}

/// Parses a config file's text in the reference's dialect. `path` is kept in the result
/// and used in error messages.
pub fn parse_config(text: &str, path: &Path) -> Result<HpccConfig> {
    parse_config_as(text, path, Dialect::Reference)
}

/// Parses a config file's text in `dialect`: the m4 dialect adds its own keys
/// ([`M4_KEYS`]) and reads `BUFFER_SIZE` in its unit; rdmalab's extensions (`DASR_*`,
/// `IOFD_*`) belong to the reference dialect only.
pub fn parse_config_as(text: &str, path: &Path, dialect: Dialect) -> Result<HpccConfig> {
    let mut c = HpccConfig::with_defaults(path);
    c.dialect = dialect;
    if dialect == Dialect::Conweave {
        c.enable_trace = false; // the fork has no packet trace (and no ENABLE_TRACE key)
    }
    let mut r = Reader::new(text, path);
    while let Some(key) = r.next_opt() {
        if dialect == Dialect::Simai {
            simai::set_simai_key(&mut c, &mut r, key)?;
            continue;
        }
        let m4_key = M4_KEYS.iter().copied().find(|k| *k == key.text);
        let cw_key = CONWEAVE_KEYS.iter().copied().find(|k| *k == key.text);
        let own = match dialect {
            Dialect::M4 => m4_key,
            Dialect::Conweave => cw_key.or(m4_key.filter(|k| *k == "ENABLE_PFC")),
            Dialect::Reference | Dialect::Simai => None,
        };
        let Some(name) = KEYS.iter().chain(EXTENSION_KEYS).copied().find(|k| *k == key.text).or(own) else {
            if dialect == Dialect::Conweave && m4_key.is_some() {
                let msg = "a key of the m4 dialect, which the ConWeave artifact does not read (the conweave dialect)";
                return Err(r.err(key.line, key.text, msg));
            }
            if m4_key.is_some() {
                let msg = "a key of the m4 dialect (netiken/m4's ns-3 on Unison): run with `--dialect m4`";
                return Err(r.err(key.line, key.text, msg));
            }
            if simai::SIMAI_KEYS.contains(&key.text) {
                let msg = "a key of SimAI's ns-3 backend (aliyun/SimAI): run with `--dialect simai`";
                return Err(r.err(key.line, key.text, msg));
            }
            if CONWEAVE_KEYS.contains(&key.text) {
                let msg = "a key of the ConWeave artifact's simulator (conweave-project/conweave-ns3): run with \
                           `--dialect conweave`";
                return Err(r.err(key.line, key.text, msg));
            }
            let msg = "unknown config key (the reference would skip it and read its value as the next key)";
            return Err(r.err(key.line, &show(key.text), msg));
        };
        if dialect != Dialect::Reference {
            refuse_extension(&mut r, key, dialect)?;
        }
        if dialect == Dialect::Conweave && conweave::NOT_READ.contains(&name) {
            let msg = "not read by the ConWeave artifact's simulator (the conweave dialect): it would skip the key \
                       and read its value as the next key";
            return Err(r.err(key.line, name, msg));
        }
        if let Some(first) = c.lines.insert(name, key.line) {
            return Err(r.err(key.line, name, format!("key given twice (first on line {first})")));
        }
        if dialect == Dialect::M4 && m4::set_m4_key(&mut c, &mut r, name)? {
            continue;
        }
        if dialect == Dialect::Conweave && conweave::set_conweave_key(&mut c, &mut r, name)? {
            continue;
        }
        set_key(&mut c, &mut r, name)?;
    }
    Ok(c)
}

/// Reads and parses the config file at `path`. A file with no key at all is an error (the
/// reference would run its defaults, with no topology or flows: surely the wrong file).
pub fn read_config(path: impl AsRef<Path>) -> Result<HpccConfig> {
    read_config_as(path, Some(Dialect::Reference))
}

/// Reads and parses the config file at `path` in `dialect`, or in the dialect its keys
/// show (`Dialect::detect`) when `None`.
pub fn read_config_as(path: impl AsRef<Path>, dialect: Option<Dialect>) -> Result<HpccConfig> {
    let path = path.as_ref();
    let text = read_text(path)?;
    if super::tokens::Tokens::new(&text).next().is_none() {
        let msg = "the config file is empty (no keys): it names no TOPOLOGY_FILE or FLOW_FILE";
        return Err(Error::input(path, 0, "TOPOLOGY_FILE", msg));
    }
    parse_config_as(&text, path, dialect.unwrap_or_else(|| Dialect::detect(&text).0))
}

/// Refuses one of rdmalab's own keys (`EXTENSION_KEYS`) in a fork's dialect, by name.
fn refuse_extension(r: &mut Reader<'_>, key: Token<'_>, dialect: Dialect) -> Result<()> {
    if EXTENSION_KEYS.contains(&key.text) {
        let msg = format!("an rdmalab extension of the reference dialect, not a key of the {} dialect", dialect.name());
        return Err(r.err(key.line, key.text, msg));
    }
    Ok(())
}

/// The `CC_MODE` values rdmalab runs, with their algorithms. Mode 10 (HPCC-PINT) parses but
/// is refused when the run is built, so it is not listed.
pub const SUPPORTED_CC_MODES: [(u32, &str); 6] = [
    (0, "no congestion control, an rdmalab extension"),
    (1, "DCQCN"),
    (3, "HPCC"),
    (7, "TIMELY"),
    (8, "DCTCP"),
    (20, "Blitz: DASR over DCQCN, an rdmalab extension"),
];

/// `0 (no congestion control, ...), 1 (DCQCN), ...` for error messages.
pub fn supported_cc_modes() -> String {
    SUPPORTED_CC_MODES.iter().map(|(c, name)| format!("{c} ({name})")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<HpccConfig> {
        parse_config(t, Path::new("c.txt"))
    }

    #[test]
    fn empty_file_is_all_defaults() {
        let c = parse("\n").unwrap();
        assert_eq!(c, HpccConfig::with_defaults(Path::new("c.txt")));
        assert_eq!(c.simulator_stop_time, Time(3_010_000_000_000));
    }

    #[test]
    fn maps_and_lines() {
        let c = parse("KMIN_MAP 2 100000000000 400 400000000000 1600\nKMAX_MAP 1 100000000000 1600\nPMAX_MAP 1 100000000000 0.20\n").unwrap();
        assert_eq!(c.ecn_for_rate(Rate::gbps(100)), Some((400_000, 1_600_000, 0.2)));
        assert_eq!(c.ecn_for_rate(Rate::gbps(400)), None);
        assert_eq!(c.line_of("KMAX_MAP"), Some(2));
        assert_eq!(c.line_of("BUFFER_SIZE"), None);
    }

    #[test]
    fn supported_modes_are_the_ones_that_run() {
        let listed: Vec<u32> = SUPPORTED_CC_MODES.iter().map(|m| m.0).collect();
        let runs: Vec<u32> =
            (0..=40).filter_map(CcMode::from_code).filter(|&m| m != CcMode::HpccPint).map(CcMode::code).collect();
        assert_eq!(listed, runs);
        assert_eq!(listed, [0, 1, 3, 7, 8, 20]);
    }

    #[test]
    fn bad_keys_and_values() {
        let cases = [
            ("CC_MODE 1\nFOO 3\n", "c.txt:2: field `FOO`", "unknown config key"),
            ("CC_MODE 2\n", "c.txt:1: field `CC_MODE`", "unknown CC_MODE 2; supported modes: 0 (no congestion control"),
            ("CC_MODE 9\n", "c.txt:1: field `CC_MODE`", "1 (DCQCN), 3 (HPCC), 7 (TIMELY), 8 (DCTCP)"),
            ("CC_MODE 1\nCC_MODE 3\n", "c.txt:2: field `CC_MODE`", "twice"),
            ("RATE_AI 20Mbs\n", "c.txt:1: field `RATE_AI`", "unknown data-rate unit"),
            ("KMIN_MAP 2 100000000000 400\n", "c.txt:1: field `KMIN_MAP`", "truncated"),
            ("PMAX_MAP 1 100000000000 1.5\n", "c.txt:1: field `PMAX_MAP`", "probability"),
            ("ALPHA_RESUME_INTERVAL x\n", "c.txt:1: field `ALPHA_RESUME_INTERVAL`", "not a decimal"),
            ("CC_MODE 1\nBUFFER_SIZE 0\n", "c.txt:2: field `BUFFER_SIZE`", "at least 1"),
        ];
        for (text, loc, msg) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(loc) && e.contains(msg), "{text:?}: {e}");
        }
    }
}
