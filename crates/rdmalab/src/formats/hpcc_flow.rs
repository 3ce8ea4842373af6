//! Reader of the ns-3 HPCC flow file (`S1_flow.txt`, repo `mix/flow.txt`; read by `ReadFlowInput`
//! in the reference's `simulation/scratch/third.cc`; docs/formats.md).
//!
//! ```text
//! F
//! src dst pg dport size start_seconds      (F times)
//! ```
//!
//! The start is converted exactly as the reference does (the decimal becomes the nearest
//! `f64`, then `floor(exact × 1e9)` ns), so start times match its FCT file's `start_ns`
//! column. The reference schedules the next read at each record's start, so records must be
//! in non-decreasing start order; it only asserts that both ends are hosts. We check every
//! field against the topology and report the file, line and field.

use std::path::Path;

use super::tokens::{read_text, Reader};
use super::units_parse::parse_start_seconds;
use crate::error::Result;
use crate::ids::NodeId;
use crate::topology::Topology;
use crate::units::Time;
use crate::workload::FlowSpec;

/// Highest priority group: switches and NICs have 8 queues.
pub const MAX_PG: u64 = 7;

/// Parses a flow file's text into flows in file order, checked against `topo`.
///
/// `sport` is left `None`: the simulator assigns the reference's per-(src, dst) counter.
/// Errors: a file with fewer than F records, a malformed number, an unknown node id, an
/// end that is a switch, `src == dst`, `pg > 7`, `dport > 65535`, `size < 1`, and a start
/// earlier than the previous record's.
pub fn parse_flows(text: &str, path: &Path, topo: &Topology) -> Result<Vec<FlowSpec>> {
    parse(text, path, topo, None, Form::Reference)
}

/// Parses a flow file of the ConWeave dialect (`src dst pg size start`: no dport). Ports are
/// numbered as the fork's `ScheduleFlowInputs` does: each source's flows take source ports
/// 10000, 10001, ... and each destination's take destination ports 100, 101, ... in file
/// order (16-bit, wrapping as the fork's `uint16_t` counters); a size of 0 becomes 1 byte.
pub fn parse_flows_conweave(text: &str, path: &Path, topo: &Topology) -> Result<Vec<FlowSpec>> {
    let mut flows = parse(text, path, topo, None, Form::Conweave)?;
    let mut sport = std::collections::HashMap::new();
    let mut dport = std::collections::HashMap::new();
    for f in &mut flows {
        let s = sport.entry(f.src).or_insert(10_000u16);
        f.sport = Some(*s);
        *s = s.wrapping_add(1);
        let d = dport.entry(f.dst).or_insert(100u16);
        f.dport = *d;
        *d = d.wrapping_add(1);
    }
    Ok(flows)
}

/// The columns of a flow record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `src dst pg dport size start`.
    Reference,
    /// `id src dst pg dport size start`, the start's exact nanosecond.
    M4,
    /// `src dst pg size start`.
    Conweave,
}

/// Parses a flow file of the m4 dialect, whose records start with a flow id
/// (`id src dst pg dport size start`): the flows, and each one's id in the same order.
/// The ids are kept as given (the fork writes them back in its FCT file).
pub fn parse_flows_with_ids(text: &str, path: &Path, topo: &Topology) -> Result<(Vec<FlowSpec>, Vec<u64>)> {
    let mut ids = Vec::new();
    let flows = parse(text, path, topo, Some(&mut ids), Form::M4)?;
    Ok((flows, ids))
}

fn parse(
    text: &str,
    path: &Path,
    topo: &Topology,
    mut ids: Option<&mut Vec<u64>>,
    form: Form,
) -> Result<Vec<FlowSpec>> {
    let mut r = Reader::new(text, path);
    r.check_record("the header", "F")?;
    let (f, _) = r.u64("F", "the flow count F")?;
    let mut flows = Vec::new();
    let mut prev = Time::ZERO;
    for k in 1..=f {
        if let Some(ids) = ids.as_deref_mut() {
            r.check_record(&format!("flow {k}"), "id src dst pg dport size start")?;
            ids.push(r.u64("id", &format!("`id` of flow {k} of F = {f}"))?.0);
        }
        let flow = read_flow(&mut r, topo, k, f, prev, form)?;
        prev = flow.start;
        flows.push(flow);
    }
    Ok(flows)
}

/// Reads and parses the flow file at `path`.
pub fn read_flows(path: impl AsRef<Path>, topo: &Topology) -> Result<Vec<FlowSpec>> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_flows(&text, path, topo)
}

/// `m4`: a record of the m4 dialect (its id already read), whose start is the decimal's exact
/// nanosecond: the fork's later ns-3 converts the seconds without the reference's floor of
/// the nearest `f64` (m4's published FCT files show `1.00597627` as 1,005,976,270 ns).
fn read_flow(r: &mut Reader<'_>, topo: &Topology, k: u64, f: u64, prev: Time, form: Form) -> Result<FlowSpec> {
    let ctx = |field: &str| format!("`{field}` of flow {k} of F = {f}");
    match form {
        Form::Reference => r.check_record(&format!("flow {k}"), "src dst pg dport size start")?,
        Form::Conweave => r.check_record(&format!("flow {k}"), "src dst pg size start")?,
        Form::M4 => {}
    }
    let m4 = form == Form::M4;
    let src = read_host(r, topo, "src", &ctx("src"), k)?;
    let dst = read_host(r, topo, "dst", &ctx("dst"), k)?;
    if src.0 == dst.0 {
        return Err(r.err(dst.1, "dst", format!("flow {k} goes from host {} to itself", src.0)));
    }
    let (pg, _) = r.u64_max("pg", &ctx("pg"), MAX_PG)?;
    let dport = if form == Form::Conweave { 0 } else { r.u64_max("dport", &ctx("dport"), u64::from(u16::MAX))?.0 };
    let (size, line) = r.u64("size", &ctx("size"))?;
    // The ConWeave fork sends 1 byte for a size of 0 (`if (target_len == 0) target_len = 1;`).
    let size = if form == Form::Conweave { size.max(1) } else { size };
    if size == 0 {
        return Err(r.err(line, "size", format!("flow {k} has size 0; sizes are at least 1 byte")));
    }
    if size > crate::workload::MAX_FLOW_BYTES {
        return Err(r.err(line, "size", format!("flow {k}: {}", crate::workload::too_large(size))));
    }
    let t = r.next("start", &ctx("start"))?;
    let start = if m4 {
        let ps = super::units_parse::parse_decimal_time(t.text, 12).map(|t| t.0 / Time::PS_PER_NS * Time::PS_PER_NS);
        ps.map(Time)
    } else {
        parse_start_seconds(t.text)
    };
    let start = start.map_err(|e| r.err(t.line, "start", format!("flow {k}: {e}")))?;
    if start < prev {
        let msg = format!(
            "flow {k} starts at {} ns, before the previous flow ({} ns); records must be in non-decreasing start order",
            start.ns(),
            prev.ns()
        );
        return Err(r.err(t.line, "start", msg));
    }
    // pg <= 7 and dport <= 65535 were checked above.
    Ok(FlowSpec { pg: pg as u8, dport: dport as u16, ..FlowSpec::new(src.0, dst.0, size, start) })
}

fn read_host(r: &mut Reader<'_>, topo: &Topology, field: &str, ctx: &str, k: u64) -> Result<(NodeId, usize)> {
    let (v, line) = r.u64(field, ctx)?;
    let n = topo.len();
    let id = match u32::try_from(v) {
        Ok(id) if (id as usize) < n => NodeId(id),
        _ => return Err(r.err(line, field, format!("flow {k}: node id {v} is not in the topology (0..{n})"))),
    };
    if !topo.is_host(id) {
        return Err(r.err(line, field, format!("flow {k}: node {v} is a switch, not a host")));
    }
    Ok((id, line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn star() -> Topology {
        let mut t = Topology::new(3, &[NodeId(0)]);
        t.add_link(NodeId(0), NodeId(1), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
        t.add_link(NodeId(0), NodeId(2), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
        t
    }

    #[test]
    fn reads_records_and_ignores_the_rest() {
        let fl = parse_flows("2 \n1 2 3 100 10 2.000000273\n2 1 0 200 1 2.000000273\nextra", Path::new("f"), &star())
            .unwrap();
        assert_eq!(fl.len(), 2);
        assert_eq!(fl[0].start, Time::from_ns(2_000_000_272));
        assert_eq!((fl[1].pg, fl[1].dport, fl[1].size, fl[1].sport), (0, 200, 1, None));
    }

    #[test]
    fn refuses_bad_records() {
        let cases = [
            ("1\n1 0 3 100 10 2.0", "f:2: field `dst`", "switch"),
            ("1\n1 1 3 100 10 2.0", "f:2: field `dst`", "itself"),
            ("1\n1 9 3 100 10 2.0", "f:2: field `dst`", "not in the topology"),
            ("1\n1 2 8 100 10 2.0", "f:2: field `pg`", "maximum 7"),
            ("1\n1 2 3 100 0 2.0", "f:2: field `size`", "size 0"),
            ("1\n1 2 3 100 -5 2.0", "f:2: field `size`", "negative"),
            ("2\n1 2 3 100 5 2.1\n2 1 3 100 5 2.0", "f:3: field `start`", "non-decreasing"),
            ("2\n1 2 3 100 5 2.1\n", "f:2: field `src`", "truncated"),
            ("1\n1 2 3 100 5 2.0x", "f:2: field `start`", "not a finite"),
            ("1\n1 2 3 18446744073709551615 2.0", "f:2: field `start`", "`start` is missing"),
            ("1\n1 2 3 100 18446744073709551615 2.0", "f:2: field `size`", "2^53"),
            ("2\n1 2 3 100 5\n2 1 3 100 5 2.0", "f:2: field `start`", "has 5 field(s)"),
            ("2\n1 2 3 100 5 2.0 7\n2 1 3 100 5 2.0", "f:2: field `start`", "has 7 field(s)"),
            ("1\n1 2 3 100 5 2.0 7", "f:2: field `start`", "extra"),
        ];
        for (text, loc, msg) in cases {
            let e = parse_flows(text, Path::new("f"), &star()).unwrap_err().to_string();
            assert!(e.contains(loc) && e.contains(msg), "{text:?}: {e}");
        }
    }

    #[test]
    fn conweave_records_have_no_dport_and_the_forks_ports() {
        let text = "3\n1 2 3 100 2.0\n1 2 3 0 2.0\n2 1 3 7 2.5\n";
        let fl = parse_flows_conweave(text, Path::new("f"), &star()).unwrap();
        let ports: Vec<_> = fl.iter().map(|f| (f.sport, f.dport, f.size)).collect();
        assert_eq!(ports, [(Some(10_000), 100, 100), (Some(10_001), 101, 1), (Some(10_000), 100, 7)]);
        let e = parse_flows_conweave("1\n1 2 3 100 10 2.0\n", Path::new("f"), &star()).unwrap_err().to_string();
        assert!(e.contains("f:2") && e.contains("has 6 field(s)"), "{e}");
    }

    #[test]
    fn m4_records_lead_with_a_flow_id() {
        let (fl, ids) =
            parse_flows_with_ids("2\n7 1 2 3 100 170 1\n9 2 1 3 100 5 1.5\n", Path::new("f"), &star()).unwrap();
        assert_eq!(ids, [7, 9]);
        assert_eq!((fl[0].src, fl[0].size, fl[1].start), (NodeId(1), 170, Time::from_ms(1_500)));
        let (fl, _) = parse_flows_with_ids("1\n0 1 2 3 100 5 1.00597627\n", Path::new("f"), &star()).unwrap();
        assert_eq!(fl[0].start, Time::from_ns(1_005_976_270), "the reference's floor of the f64 gives ..269");
        let e = parse_flows_with_ids("1\n1 2 3 100 10 2.0\n", Path::new("f"), &star()).unwrap_err().to_string();
        assert!(e.contains("f:2") && e.contains("has 6 field(s)"), "{e}");
    }
}
