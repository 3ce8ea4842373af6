//! The value readers of `hpcc_config`: one function per group of keys (files, CC, HPCC,
//! Blitz, switch), and the typed readers they share. Each reads the key's value from the
//! token stream and names the key and line in its error.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{supported_cc_modes, CcMode, HpccConfig, LinkDown};
use crate::error::Result;
use crate::formats::tokens::Reader;
use crate::formats::units_parse::{parse_decimal_time, parse_rate, ValueError};
use crate::ids::NodeId;
use crate::units::{Rate, Time};

/// `BUFFER_SIZE` in MB: at least 1. A zero buffer leaves the dynamic threshold at zero, so
/// a lossless switch would pause on every packet past its reserve.
pub(super) fn buffer_size(r: &mut Reader<'_>, key: &str) -> Result<u32> {
    let line = r.peek_line();
    let mb = u32_value(r, key)?;
    if mb == 0 {
        return Err(r.err(line, key, "must be at least 1 (MB): a switch needs a buffer"));
    }
    Ok(mb)
}

pub(super) fn set_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &'static str) -> Result<()> {
    if set_file_key(c, r, key)? || set_cc_key(c, r, key)? || set_hpcc_key(c, r, key)? || set_blitz_key(c, r, key)? {
        return Ok(());
    }
    set_switch_key(c, r, key)
}

pub(super) fn set_file_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &str) -> Result<bool> {
    match key {
        "TOPOLOGY_FILE" => c.topology_file = Some(path_value(r, key)?),
        "FLOW_FILE" => c.flow_file = Some(path_value(r, key)?),
        "TRACE_FILE" => c.trace_file = Some(path_value(r, key)?),
        "TRACE_OUTPUT_FILE" => c.trace_output_file = Some(path_value(r, key)?),
        "FCT_OUTPUT_FILE" => c.fct_output_file = path_value(r, key)?,
        "PFC_OUTPUT_FILE" => c.pfc_output_file = path_value(r, key)?,
        "QLEN_MON_FILE" => c.qlen_mon_file = Some(path_value(r, key)?),
        "QLEN_MON_START" => c.qlen_mon_start = ns_value(r, key)?,
        "QLEN_MON_END" => c.qlen_mon_end = ns_value(r, key)?,
        "SIMULATOR_STOP_TIME" => c.simulator_stop_time = time_value(r, key, 12)?,
        "ENABLE_TRACE" => c.enable_trace = flag(r, key)?,
        "LINK_DOWN" => c.link_down = link_down(r, key)?,
        _ => return Ok(false),
    }
    Ok(true)
}

pub(super) fn set_cc_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &str) -> Result<bool> {
    match key {
        "CC_MODE" => c.cc_mode = cc_mode(r, key)?,
        "ALPHA_RESUME_INTERVAL" => c.alpha_resume_interval = time_value(r, key, 6)?,
        "RATE_DECREASE_INTERVAL" => c.rate_decrease_interval = time_value(r, key, 6)?,
        "RP_TIMER" => c.rp_timer = time_value(r, key, 6)?,
        "CLAMP_TARGET_RATE" => c.clamp_target_rate = flag(r, key)?,
        "EWMA_GAIN" => c.ewma_gain = probability(r, key)?,
        "FAST_RECOVERY_TIMES" => c.fast_recovery_times = u32_value(r, key)?,
        "RATE_AI" => c.rate_ai = Some(rate_value(r, key)?),
        "RATE_HAI" => c.rate_hai = Some(rate_value(r, key)?),
        "MIN_RATE" => c.min_rate = rate_value(r, key)?,
        "DCTCP_RATE_AI" => c.dctcp_rate_ai = rate_value(r, key)?,
        "L2_CHUNK_SIZE" => c.l2_chunk_size = u32_value(r, key)?,
        "L2_ACK_INTERVAL" => c.l2_ack_interval = u32_value(r, key)?,
        "L2_BACK_TO_ZERO" => c.l2_back_to_zero = flag(r, key)?,
        "HAS_WIN" => c.has_win = flag(r, key)?,
        "GLOBAL_T" => c.global_t = u32_value(r, key)? == 1,
        "VAR_WIN" => c.var_win = flag(r, key)?,
        "RATE_BOUND" => c.rate_bound = flag(r, key)?,
        "ACK_HIGH_PRIO" => c.ack_high_prio = flag(r, key)?,
        _ => return Ok(false),
    }
    Ok(true)
}

pub(super) fn set_hpcc_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &str) -> Result<bool> {
    match key {
        "FAST_REACT" => c.fast_react = flag(r, key)?,
        "U_TARGET" => c.u_target = float(r, key)?,
        "MI_THRESH" => c.mi_thresh = u32_value(r, key)?,
        "INT_MULTI" => c.int_multi = u32_value(r, key)?,
        "MULTI_RATE" => c.multi_rate = flag(r, key)?,
        "SAMPLE_FEEDBACK" => c.sample_feedback = flag(r, key)?,
        "PINT_LOG_BASE" => c.pint_log_base = float(r, key)?,
        "PINT_PROB" => c.pint_prob = probability(r, key)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// rdmalab's Blitz keys; their ranges and the modes they apply to are checked when the
/// run is built (`hpcc_compat`).
pub(super) fn set_blitz_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &str) -> Result<bool> {
    match key {
        "DASR_UTILIZATION" => c.dasr_utilization = float(r, key)?,
        "DASR_COUNT" => c.dasr_count = u32_value(r, key)?,
        "DASR_EDGE_ECN" => c.dasr_edge_ecn = flag(r, key)?,
        "IOFD_ENABLE" => c.iofd_enable = flag(r, key)?,
        "IOFD_MAX_DEFLECTIONS" => c.iofd_max_deflections = u32_value(r, key)?,
        "IOFD_THRESHOLD" => c.iofd_threshold = r.u64(key, &ctx(key))?.0,
        "IOFD_NONMINIMAL" => c.iofd_nonminimal = flag(r, key)?,
        "IOFD_RESEQ_KB" => c.iofd_reseq_kb = u32_value(r, key)?,
        _ => return Ok(false),
    }
    Ok(true)
}

pub(super) fn set_switch_key(c: &mut HpccConfig, r: &mut Reader<'_>, key: &str) -> Result<()> {
    match key {
        "ENABLE_QCN" => c.enable_qcn = flag(r, key)?,
        "USE_DYNAMIC_PFC_THRESHOLD" => c.use_dynamic_pfc_threshold = flag(r, key)?,
        "PACKET_PAYLOAD_SIZE" => c.packet_payload_size = payload_size(r, key)?,
        "BUFFER_SIZE" => c.buffer_size_mb = buffer_size(r, key)?,
        "ERROR_RATE_PER_LINK" => c.error_rate_per_link = probability(r, key)?,
        "PAUSE_TIME" => c.pause_time = float(r, key)?,
        "DATA_RATE" => c.data_rate = Some(rate_value(r, key)?),
        "LINK_DELAY" => {
            let t = r.next(key, &format!("the value of {key}"))?;
            let v = crate::formats::units_parse::parse_time(t.text).map_err(|e| r.err(t.line, key, e.0))?;
            c.link_delay = Some(v);
        }
        "KMAX_MAP" => read_u32_map(r, key, &mut c.kmax_map)?,
        "KMIN_MAP" => read_u32_map(r, key, &mut c.kmin_map)?,
        "PMAX_MAP" => read_pmax_map(r, key, &mut c.pmax_map)?,
        _ => return Err(r.err(r_line(c, key), key, "key known but not handled (a bug in rdmalab)")),
    }
    Ok(())
}

pub(super) fn r_line(c: &HpccConfig, key: &str) -> usize {
    c.line_of(key).unwrap_or(0)
}

pub(super) fn ctx(key: &str) -> String {
    format!("the value of {key}")
}

pub(super) fn path_value(r: &mut Reader<'_>, key: &str) -> Result<PathBuf> {
    Ok(PathBuf::from(r.next(key, &ctx(key))?.text))
}

/// An unsigned key's value. A whole number written as a decimal (`16.0`, which the
/// reference's own `run.py` writes for `BUFFER_SIZE` and `INT_MULTI` under Python 3) is that
/// number: the reference's `conf >> v` takes `16` and reads `.0` as a key it skips. A
/// fraction that is not zero is refused: the reference would drop it without a word.
pub(super) fn u32_value(r: &mut Reader<'_>, key: &str) -> Result<u32> {
    let t = r.next(key, &ctx(key))?;
    let whole = match t.text.split_once('.') {
        Some((int, frac)) if !int.is_empty() && !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) => {
            if frac.bytes().any(|b| b != b'0') {
                let msg = format!(
                    "`{}` is not a whole number: the reference reads {int} and then `.{frac}` as a key it skips, \
                     dropping the fraction; write {int} if that is meant",
                    t.text
                );
                return Err(r.err(t.line, key, msg));
            }
            int
        }
        _ => t.text,
    };
    let v = crate::formats::tokens::parse_u64(whole).map_err(|m| r.err(t.line, key, m))?;
    if v > u64::from(u32::MAX) {
        return Err(r.err(t.line, key, format!("{v} is larger than the maximum {}", u32::MAX)));
    }
    Ok(v as u32)
}

/// A 0/1 switch; like the reference, any nonzero value is on.
pub(super) fn flag(r: &mut Reader<'_>, key: &str) -> Result<bool> {
    Ok(u32_value(r, key)? != 0)
}

pub(super) fn float(r: &mut Reader<'_>, key: &str) -> Result<f64> {
    Ok(r.f64(key, &ctx(key))?.0)
}

pub(super) fn probability(r: &mut Reader<'_>, key: &str) -> Result<f64> {
    let (v, line) = r.f64(key, &ctx(key))?;
    if v > 1.0 {
        return Err(r.err(line, key, format!("{v} is not a probability in [0, 1]")));
    }
    Ok(v)
}

pub(super) fn payload_size(r: &mut Reader<'_>, key: &str) -> Result<u32> {
    let (v, line) = r.u64_max(key, &ctx(key), u64::from(u32::MAX))?;
    if v == 0 {
        return Err(r.err(line, key, "the payload size must be at least 1 byte"));
    }
    Ok(v as u32) // checked above
}

pub(super) fn cc_mode(r: &mut Reader<'_>, key: &str) -> Result<CcMode> {
    let (v, line) = r.u64(key, &ctx(key))?;
    CcMode::from_code(v)
        .ok_or_else(|| r.err(line, key, format!("unknown CC_MODE {v}; supported modes: {}", supported_cc_modes())))
}

pub(super) fn rate_value(r: &mut Reader<'_>, key: &str) -> Result<Rate> {
    let t = r.next(key, &ctx(key))?;
    parse_rate(t.text).map_err(|e| r.err(t.line, key, e.0))
}

/// A plain decimal in a unit of `10^ps_pow10` ps (µs: 6, s: 12), as exact picoseconds.
pub(super) fn time_value(r: &mut Reader<'_>, key: &str, ps_pow10: i32) -> Result<Time> {
    let t = r.next(key, &ctx(key))?;
    parse_decimal_time(t.text, ps_pow10).map_err(|ValueError(m)| r.err(t.line, key, m))
}

pub(super) fn ns_value(r: &mut Reader<'_>, key: &str) -> Result<Time> {
    let (v, line) = r.u64(key, &ctx(key))?;
    v.checked_mul(Time::PS_PER_NS).map(Time).ok_or_else(|| r.err(line, key, format!("{v} ns is too large")))
}

pub(super) fn link_down(r: &mut Reader<'_>, key: &str) -> Result<Option<LinkDown>> {
    let (us, line) = r.u64(key, "the time (µs after 2 s) of LINK_DOWN")?;
    let a = u32_value(r, key)?;
    let b = u32_value(r, key)?;
    if us == 0 {
        return Ok(None);
    }
    let at = us
        .checked_mul(1_000_000)
        .and_then(|ps| ps.checked_add(Time::from_ms(2_000).0))
        .ok_or_else(|| r.err(line, key, format!("{us} µs is too large")))?;
    Ok(Some(LinkDown { at: Time(at), a: NodeId(a), b: NodeId(b) }))
}

/// `n rate1 v1 ... raten vn`; later entries for a rate replace earlier ones, as in the reference.
pub(super) fn read_u32_map(r: &mut Reader<'_>, key: &str, map: &mut BTreeMap<Rate, u32>) -> Result<()> {
    let (n, _) = r.u64(key, &format!("the entry count of {key}"))?;
    for i in 1..=n {
        let rate = map_rate(r, key, i)?;
        let (v, _) = r.u64_max(key, &format!("the value of entry {i} of {key}"), u64::from(u32::MAX))?;
        map.insert(rate, v as u32); // checked above
    }
    Ok(())
}

pub(super) fn read_pmax_map(r: &mut Reader<'_>, key: &str, map: &mut BTreeMap<Rate, f64>) -> Result<()> {
    let (n, _) = r.u64(key, &format!("the entry count of {key}"))?;
    for i in 1..=n {
        let rate = map_rate(r, key, i)?;
        let (p, line) = r.f64(key, &format!("the probability of entry {i} of {key}"))?;
        if p > 1.0 {
            return Err(r.err(line, key, format!("entry {i}: {p} is not a probability in [0, 1]")));
        }
        map.insert(rate, p);
    }
    Ok(())
}

pub(super) fn map_rate(r: &mut Reader<'_>, key: &str, i: u64) -> Result<Rate> {
    let (bps, line) = r.u64(key, &format!("the rate (bps) of entry {i} of {key}"))?;
    if bps == 0 {
        return Err(r.err(line, key, format!("entry {i}: a zero rate")));
    }
    Ok(Rate(bps))
}

#[cfg(test)]
mod tests {
    use super::super::parse_config;
    use std::path::Path;

    #[test]
    fn whole_numbers_written_as_decimals_are_read() {
        // What the reference's run.py writes under Python 3 (`bfsz = 16 * bw / 50`,
        // `int_multi = bw / 25`).
        let c = parse_config("BUFFER_SIZE 16.0\nINT_MULTI 2.00\n", Path::new("c.txt")).unwrap();
        assert_eq!((c.buffer_size_mb, c.int_multi), (16, 2));
        let e = parse_config("CC_MODE 3\nBUFFER_SIZE 16.5\n", Path::new("c.txt")).unwrap_err().to_string();
        assert!(e.contains("c.txt:2: field `BUFFER_SIZE`: `16.5` is not a whole number"), "{e}");
        for bad in ["BUFFER_SIZE .5\n", "BUFFER_SIZE 16.\n", "BUFFER_SIZE 1e3\n"] {
            assert!(parse_config(bad, Path::new("c.txt")).is_err(), "{bad}");
        }
    }
}
