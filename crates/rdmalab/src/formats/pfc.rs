//! The reference's PFC output file (`get_pfc` in its `simulation/scratch/third.cc`): one line
//! per PFC frame received by a device, `time_ns node_id node_type ifindex kind` (node_type 0
//! host, 1 switch; kind 1 pause, 0 resume). Written in the same format so the reference's
//! tools read our runs.

use std::io::Write;
use std::path::Path;

use super::tokens::{parse_fixed_lines, parse_u64, read_text};
use crate::error::{Error, Result};
use crate::ids::NodeId;
/// The record lives in `stats` (the simulator makes it); this module reads and writes it.
use crate::stats::PfcEvent;
use crate::units::Time;

/// Writes one line per event, in the order given.
pub fn write_pfc(w: &mut impl Write, events: &[PfcEvent]) -> std::io::Result<()> {
    for e in events {
        writeln!(w, "{} {} {} {} {}", e.time.ns(), e.node.0, u8::from(e.node_is_switch), e.ifindex, u8::from(e.pause))?;
    }
    Ok(())
}

const FIELDS: [&str; 5] = ["time_ns", "node_id", "node_type", "ifindex", "kind"];

/// Parses a PFC file; blank lines are skipped.
pub fn parse_pfc(text: &str, path: &Path) -> Result<Vec<PfcEvent>> {
    parse_fixed_lines(text, path, &FIELDS, |toks, line| parse_line(toks, line, path))
}

/// Reads and parses the PFC file at `path`.
pub fn read_pfc(path: impl AsRef<Path>) -> Result<Vec<PfcEvent>> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_pfc(&text, path)
}

fn parse_line(toks: &[&str], line: usize, path: &Path) -> Result<PfcEvent> {
    let num = |i: usize, max: u64| {
        let field = FIELDS.get(i).copied().unwrap_or("?");
        let v = parse_u64(toks.get(i).copied().unwrap_or("")).map_err(|m| Error::input(path, line, field, m))?;
        if v > max {
            return Err(Error::input(path, line, field, format!("{v} is larger than the maximum {max}")));
        }
        Ok(v)
    };
    let ns = num(0, u64::MAX / Time::PS_PER_NS)?;
    Ok(PfcEvent {
        time: Time::from_ns(ns),
        node: NodeId(num(1, u64::from(u32::MAX))? as u32),
        node_is_switch: num(2, 1)? == 1,
        ifindex: num(3, u64::from(u16::MAX))? as u16,
        pause: num(4, 1)? == 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let text = "2000001234 320 1 3 1\n2000005678 5 0 1 0\n";
        let ev = parse_pfc(text, Path::new("p")).unwrap();
        assert_eq!(
            ev[0],
            PfcEvent {
                time: Time::from_ns(2_000_001_234),
                node: NodeId(320),
                node_is_switch: true,
                ifindex: 3,
                pause: true
            }
        );
        let mut out = Vec::new();
        write_pfc(&mut out, &ev).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
        let e = parse_pfc("1 2 2 1 0\n", Path::new("p")).unwrap_err().to_string();
        assert!(e.contains("p:1: field `node_type`"), "{e}");
    }
}
