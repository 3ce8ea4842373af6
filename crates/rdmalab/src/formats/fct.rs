//! The reference's FCT output file (written by `qp_finish` in its `simulation/scratch/third.cc`;
//! docs/formats.md): writer and reader.
//!
//! ```text
//! sip dip sport dport size start_ns fct_ns ideal_ns
//! 0b000d01 0b000a01 10000 100 47652 2000000067 8047 8156
//! ```
//!
//! One line per completed flow, addresses as 8 lowercase hex digits, times in whole ns. We
//! write the same bytes the reference writes, so its analysis scripts read our output, and
//! read its files so that runs can be compared flow by flow.

use std::io::Write;
use std::path::Path;

use super::tokens::{parse_fixed_lines, parse_u64, read_text};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::stats::FlowRecord;
use crate::units::Time;

/// One line of an FCT file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FctLine {
    /// Source IPv4 address.
    pub sip: u32,
    /// Destination IPv4 address.
    pub dip: u32,
    /// Source UDP port.
    pub sport: u16,
    /// Destination UDP port.
    pub dport: u16,
    /// Flow size in bytes.
    pub size: u64,
    /// Absolute start time in ns.
    pub start_ns: u64,
    /// Completion time in ns.
    pub fct_ns: u64,
    /// The reference's ideal (standalone) FCT in ns.
    pub ideal_ns: u64,
}

/// The node id the reference encodes in a host address: `(ip >> 8) & 0xFFFF`, continued
/// past 65,536 hosts as [`host_of_ip`](crate::topology::host_of_ip) says.
pub const fn ip_to_node(ip: u32) -> NodeId {
    NodeId(crate::topology::host_of_ip(ip))
}

impl FctLine {
    /// The line the reference would write for `r` (times truncated to whole ns).
    pub fn from_record(r: &FlowRecord) -> FctLine {
        FctLine {
            sip: r.sip,
            dip: r.dip,
            sport: r.sport,
            dport: r.dport,
            size: r.size,
            start_ns: r.start.ns(),
            fct_ns: r.fct.ns(),
            ideal_ns: r.ideal.ns(),
        }
    }

    /// A record for this line, as flow `flow` of a scenario. Node ids come from the addresses
    /// ([`ip_to_node`]); `None` when a time in ps would not fit in `u64`.
    pub fn to_record(&self, flow: u32) -> Option<FlowRecord> {
        let ps = |ns: u64| ns.checked_mul(Time::PS_PER_NS).map(Time);
        Some(FlowRecord {
            flow,
            src: ip_to_node(self.sip),
            dst: ip_to_node(self.dip),
            sip: self.sip,
            dip: self.dip,
            sport: self.sport,
            dport: self.dport,
            size: self.size,
            start: ps(self.start_ns)?,
            fct: ps(self.fct_ns)?,
            ideal: ps(self.ideal_ns)?,
            tenant: 0,
            retx_packets: 0,
            nacks: 0,
            timeouts: 0,
            rx: Default::default(),
        })
    }
}

/// Writes one line per record, in the order given, in the reference's format
/// `%08x %08x sport dport size start_ns fct_ns ideal_ns`.
pub fn write_fct(w: &mut impl Write, records: &[FlowRecord]) -> std::io::Result<()> {
    for r in records {
        write_fct_line(w, &FctLine::from_record(r))?;
    }
    Ok(())
}

/// Writes one FCT line.
pub fn write_fct_line(w: &mut impl Write, l: &FctLine) -> std::io::Result<()> {
    writeln!(
        w,
        "{:08x} {:08x} {} {} {} {} {} {}",
        l.sip, l.dip, l.sport, l.dport, l.size, l.start_ns, l.fct_ns, l.ideal_ns
    )
}

/// Writes one line of the ConWeave artifact's FCT file: the reference's fields with the two
/// hosts as node ids in decimal (its main program's `qp_finish`:
/// `"%u %u %u %u %lu %lu %lu %lu\n"` of `Settings::ip_to_node_id(q->sip)`, ...), the node id
/// being the address's `(ip >> 8) & 0xffff` (`settings.cc`).
pub fn write_fct_line_node_ids(w: &mut impl Write, l: &FctLine) -> std::io::Result<()> {
    writeln!(
        w,
        "{} {} {} {} {} {} {} {}",
        ip_to_node(l.sip).0,
        ip_to_node(l.dip).0,
        l.sport,
        l.dport,
        l.size,
        l.start_ns,
        l.fct_ns,
        l.ideal_ns
    )
}

/// Field names of a line, in order.
const FIELDS: [&str; 8] = ["sip", "dip", "sport", "dport", "size", "start_ns", "fct_ns", "ideal_ns"];

/// Parses an FCT file: one line of 8 fields per flow; blank lines are skipped.
pub fn read_fct(text: &str, path: &Path) -> Result<Vec<FctLine>> {
    parse_fixed_lines(text, path, &FIELDS, |toks, line| parse_line(toks, line, path))
}

/// Reads and parses the FCT file at `path`.
pub fn read_fct_file(path: impl AsRef<Path>) -> Result<Vec<FctLine>> {
    let path = path.as_ref();
    let text = read_text(path)?;
    read_fct(&text, path)
}

fn parse_line(toks: &[&str], line: usize, path: &Path) -> Result<FctLine> {
    let tok = |i: usize| toks.get(i).copied().unwrap_or("");
    let field = |i: usize| FIELDS.get(i).copied().unwrap_or("?");
    let hex = |i: usize| {
        let t = tok(i);
        let ok = !t.is_empty() && t.len() <= 8 && t.bytes().all(|b| b.is_ascii_hexdigit());
        u32::from_str_radix(t, 16).ok().filter(|_| ok).ok_or_else(|| {
            Error::input(path, line, field(i), format!("`{}` is not an 8-digit hex address", super::tokens::show(t)))
        })
    };
    let num = |i: usize| parse_u64(tok(i)).map_err(|m| Error::input(path, line, field(i), m));
    let port = |i: usize| {
        let v = num(i)?;
        u16::try_from(v).map_err(|_| Error::input(path, line, field(i), format!("port {v} is larger than 65535")))
    };
    Ok(FctLine {
        sip: hex(0)?,
        dip: hex(1)?,
        sport: port(2)?,
        dport: port(3)?,
        size: num(4)?,
        start_ns: num(5)?,
        fct_ns: num(6)?,
        ideal_ns: num(7)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_of_a_reference_line() {
        let text = "0b000d01 0b000a01 10000 100 47652 2000000067 8047 8156\n";
        let lines = read_fct(text, Path::new("x")).unwrap();
        let rec = lines[0].to_record(0).unwrap();
        assert_eq!((rec.src, rec.dst), (NodeId(13), NodeId(10)));
        let mut out = Vec::new();
        write_fct(&mut out, &[rec]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }

    #[test]
    fn malformed_lines() {
        let e = read_fct("0b000d01 0b000a01 10000 100\n", Path::new("x")).unwrap_err().to_string();
        assert!(e.contains("x:1: field `size`"), "{e}");
        let e = read_fct("\nzz 0b000a01 1 1 1 1 1 1\n", Path::new("x")).unwrap_err().to_string();
        assert!(e.contains("x:2: field `sip`"), "{e}");
        let e = read_fct("0b 0b 70000 1 1 1 1 1\n", Path::new("x")).unwrap_err().to_string();
        assert!(e.contains("x:1: field `sport`"), "{e}");
    }
}
