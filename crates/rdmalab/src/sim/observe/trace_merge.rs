//! The trace of a parallel run: each partition spools its rows with their order key, and
//! the spools are merged into one file as one simulation would have written it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::trace::{COLUMNS, NOT_OWNER, QLEN, RECORD_BYTES};
use crate::error::{Error, Result};

/// Interleaves the keyed spools of a parallel run's partitions (each in the origin order)
/// into the trace file `dest`, as one simulation would have written it: by time, the key
/// of the event, node, rank (`RowKey`); at most `max_bytes` (`RECORD_BYTES` a record). Returns
/// (records written, truncated). `truncated`: some partition already stopped at the cap.
pub fn merge_spools(parts: &[PathBuf], dest: &Path, max_bytes: u64, truncated: bool) -> Result<(u64, bool)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::io::BufRead;
    type Key = (u64, u64, u32, u8);
    let bad =
        |path: &Path, line: &str| Error::Invariant(format!("{}: not a trace spool line: {line:?}", path.display()));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e| Error::Io { path, source: e }
    };
    // The key of a spool line (`event,rank,time,kind,node,...`) and where the record starts.
    let key_of = |path: &Path, line: &str| -> Result<(Key, usize)> {
        let mut f = line.splitn(6, ',');
        let mut num = || f.next().and_then(|v| v.parse::<u64>().ok());
        let (event, rank, time) = (num(), num(), num());
        let _kind = f.next();
        let node = f.next().and_then(|v| v.parse::<u32>().ok());
        let (Some(event), Some(rank), Some(time), Some(node)) = (event, rank, time, node) else {
            return Err(bad(path, line));
        };
        let start = line.match_indices(',').nth(1).map(|(i, _)| i + 1).ok_or_else(|| bad(path, line))?;
        Ok(((time, event, node, rank as u8), start))
    };
    let mut readers = Vec::with_capacity(parts.len());
    let mut heap = BinaryHeap::new();
    let mut lines = vec![String::new(); parts.len()];
    for (k, path) in parts.iter().enumerate() {
        let mut r = std::io::BufReader::with_capacity(1 << 16, File::open(path).map_err(io(path))?);
        let mut header = String::new();
        r.read_line(&mut header).map_err(io(path))?;
        if r.read_line(&mut lines[k]).map_err(io(path))? > 0 {
            heap.push(Reverse((key_of(path, lines[k].trim_end())?.0, k)));
        }
        readers.push(r);
    }
    let mut out = BufWriter::with_capacity(1 << 16, File::create(dest).map_err(io(dest))?);
    writeln!(out, "{COLUMNS}").map_err(io(dest))?;
    let (mut records, mut cut) = (0u64, truncated);
    // The owner's queue length at a port whose wire a failure emptied: (time, event, port).
    let mut qlen: Option<((u64, u64, u32), String)> = None;
    while let Some(Reverse((key, k))) = heap.pop() {
        let path = &parts[k];
        let (_, start) = key_of(path, lines[k].trim_end())?;
        let record = lines[k][start..].trim_end();
        let field = |i: usize| record.split(',').nth(i).ok_or_else(|| bad(path, record));
        let port = || field(3).and_then(|p| p.parse::<u32>().map_err(|_| bad(path, record)));
        if key.3 == QLEN {
            qlen = Some(((key.0, key.1, port()?), field(4)?.to_string()));
        } else if (records + 1) * RECORD_BYTES > max_bytes {
            cut = true;
            break;
        } else {
            let fix = qlen.as_ref().filter(|(at, _)| key.3 == NOT_OWNER && *at == (key.0, key.1, port().unwrap_or(0)));
            match fix {
                Some((_, q)) => {
                    let head = &record[..record.rfind(',').ok_or_else(|| bad(path, record))?];
                    writeln!(out, "{head},{q}").map_err(io(dest))?;
                }
                None => out.write_all(&lines[k].as_bytes()[start..]).map_err(io(dest))?,
            }
            records += 1;
        }
        lines[k].clear();
        if readers[k].read_line(&mut lines[k]).map_err(io(path))? > 0 {
            heap.push(Reverse((key_of(path, lines[k].trim_end())?.0, k)));
        }
    }
    out.flush().map_err(io(dest))?;
    Ok((records, cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two partitions' keyed spools interleave by (time, event key, node, rank), the owner's
    /// queue length goes into the records the other partition wrote for its port, and the
    /// cap applies to the merged order.
    #[test]
    fn spools_merge_in_the_origin_order_under_the_cap() {
        let dir = std::env::temp_dir().join(format!("rdmalab-trace-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spool = |name: &str, lines: &[&str]| {
            let path = dir.join(name);
            std::fs::write(&path, format!("{COLUMNS}\n{}\n", lines.join("\n"))).unwrap();
            path
        };
        let a = spool(
            "a",
            &[
                "7,2,10,dequeue,3,5,,,pause,0,3,64,0,0",
                "4,0,20,qlen,1,2,9000",
                "4,2,20,drop,1,2,0,0,data,2,3,1048,1000,9000",
            ],
        );
        let b = spool("b", &["2,2,10,enqueue,8,9,,,pause,0,3,64,0,0", "4,1,20,drop,1,2,0,0,data,1,3,1048,1000,0"]);
        let dest = dir.join("t.csv");
        let all = merge_spools(&[a.clone(), b.clone()], &dest, 100 * RECORD_BYTES, false).unwrap();
        assert_eq!(all, (4, false));
        let text = std::fs::read_to_string(&dest).unwrap();
        let want = [
            "10,enqueue,8,9,,,pause,0,3,64,0,0",
            "10,dequeue,3,5,,,pause,0,3,64,0,0",
            "20,drop,1,2,0,0,data,1,3,1048,1000,9000",
            "20,drop,1,2,0,0,data,2,3,1048,1000,9000",
        ];
        assert_eq!(text.lines().skip(1).collect::<Vec<_>>(), want);
        assert_eq!(merge_spools(&[a, b], &dest, 3 * RECORD_BYTES, false).unwrap(), (3, true));
        assert_eq!(std::fs::read_to_string(&dest).unwrap().lines().count(), 4, "header and three records");
        std::fs::remove_dir_all(dir).ok();
    }
}
