//! Reader of a partition map for the parallel engine (`partition_map` in a scenario file).
//!
//! ```text
//! # node partition      (comments and blank lines are skipped)
//! 0 0
//! 1 0
//! 16 1
//! ```
//!
//! Every node of the topology (hosts and switches, by id) is named exactly once; partitions
//! are numbered from 0 and every number up to the largest is used. The map decides how many
//! partitions, hence threads, the run has.

use std::path::Path;

use super::tokens::read_text;
use crate::error::{Error, Result};

/// The most partitions a map may have (partition numbers are 16-bit, one value reserved).
pub const MAX_PARTITIONS: u64 = u16::MAX as u64 - 1;

/// Parses a map of `nodes` nodes: the partition of every node, by node id.
pub fn parse_partition_map(text: &str, path: &Path, nodes: usize) -> Result<Vec<u16>> {
    let mut part_of: Vec<Option<(u16, usize)>> = vec![None; nodes];
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let mut words = body.split_whitespace();
        let node = number(path, line, "node", words.next())?;
        let part = number(path, line, "partition", words.next())?;
        if let Some(extra) = words.next() {
            return Err(Error::input(path, line, "partition", format!("unexpected `{extra}` after `node partition`")));
        }
        let Some(slot) = usize::try_from(node).ok().filter(|&n| n < nodes).map(|n| &mut part_of[n]) else {
            return Err(Error::input(
                path,
                line,
                "node",
                format!("node {node} is not in the topology (ids 0..{nodes})"),
            ));
        };
        if part > MAX_PARTITIONS {
            return Err(Error::input(
                path,
                line,
                "partition",
                format!("{part} is past the largest partition number, {MAX_PARTITIONS}"),
            ));
        }
        if let Some((_, first)) = *slot {
            return Err(Error::input(path, line, "node", format!("node {node} is already placed on line {first}")));
        }
        *slot = Some((part as u16, line));
    }
    let end = text.lines().count();
    if let Some(missing) = part_of.iter().position(Option::is_none) {
        let msg = format!("node {missing} has no partition (every node of the topology must be named once)");
        return Err(Error::input(path, end, "node", msg));
    }
    let part_of: Vec<u16> = part_of.into_iter().map(|p| p.map_or(0, |(part, _)| part)).collect();
    let parts = part_of.iter().map(|&p| p as usize + 1).max().unwrap_or(0);
    let mut used = vec![false; parts];
    part_of.iter().for_each(|&p| used[p as usize] = true);
    if let Some(gap) = used.iter().position(|u| !u) {
        let msg = format!("partition {gap} has no node; number partitions 0..{} without gaps", parts - 1);
        return Err(Error::input(path, end, "partition", msg));
    }
    Ok(part_of)
}

/// Reads and parses the map at `path`.
pub fn read_partition_map(path: impl AsRef<Path>, nodes: usize) -> Result<Vec<u16>> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_partition_map(&text, path, nodes)
}

fn number(path: &Path, line: usize, field: &str, word: Option<&str>) -> Result<u64> {
    let word = word.ok_or_else(|| Error::input(path, line, field, "missing (each line is `node partition`)"))?;
    word.parse().map_err(|_| Error::input(path, line, field, format!("`{word}` is not a non-negative integer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, nodes: usize) -> Result<Vec<u16>> {
        parse_partition_map(text, Path::new("map.txt"), nodes)
    }

    fn err(text: &str, nodes: usize) -> String {
        parse(text, nodes).unwrap_err().to_string()
    }

    #[test]
    fn reads_every_node_in_any_order() {
        assert_eq!(parse("# header\n2 1\n0 0\n\n1 0  # a comment\n", 3).unwrap(), vec![0, 0, 1]);
    }

    #[test]
    fn names_file_line_and_field_of_bad_input() {
        assert!(err("0 0\n1 x\n", 2).contains("map.txt:2") && err("0 0\n1 x\n", 2).contains("partition"));
        assert!(err("0 0\n5 0\n", 2).contains("node 5 is not in the topology"));
        assert!(err("0 0\n0 1\n1 0\n", 2).contains("already placed on line 1"));
        assert!(err("0 0\n", 2).contains("node 1 has no partition"));
        assert!(err("0 0\n1 2\n", 2).contains("partition 1 has no node"));
        assert!(err("0 0 7\n1 0\n", 2).contains("unexpected `7`"));
        assert!(err("0\n1 0\n", 2).contains("missing"));
        assert!(err("0 0\n1 70000\n", 2).contains("largest partition number"));
    }
}
