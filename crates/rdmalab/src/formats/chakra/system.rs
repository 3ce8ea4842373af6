//! ASTRA-sim's system configuration (a JSON object, `examples/system/native_collectives/*.json`
//! in astra-sim/astra-sim) as far as it decides how a collective runs (docs/chakra.md, "The
//! system file").
//!
//! Read: `all-reduce-implementation`, `all-gather-implementation`,
//! `reduce-scatter-implementation`, `all-to-all-implementation` (a list with one algorithm per
//! network dimension, `formats::chakra::dims`), `collective-optimization` (how an all-reduce
//! crosses the dimensions), `preferred-dataset-splits`, `active-chunks-per-dimension`,
//! `endpoint-delay` (ASTRA-sim's cycles of 1 ns), `scheduling-policy`, and `roofline-enabled`
//! with `peak-perf` and `local-mem-bw` (the roofline model of GPU compute nodes, [`Roofline`]).
//! Accepted because nothing a run does reads them: `boost-mode` 0, `model-shared-bus` 0 with
//! the bus's `L`, `o`, `g`, `G` and `local-reduction-delay`, `replay-only` 0, and ASTRA-sim's
//! logs (`trace-enabled`, `track-local-mem`, `local-mem-trace-filename`). Every other key is
//! refused by name.

use std::path::Path;

use serde_json::Value;

use crate::app::collective::{Algorithm, Kind};
use crate::error::{Error, Result};
use crate::formats::tokens::read_text;
use crate::units::Time;

/// What a system file sets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct System {
    /// The algorithm per kind.
    pub algorithms: Vec<(Kind, Algorithm)>,
    /// `preferred-dataset-splits`.
    pub splits: Option<u32>,
    /// `active-chunks-per-dimension`.
    pub active: Option<u32>,
    /// `endpoint-delay`.
    pub endpoint_delay: Option<Time>,
    /// `scheduling-policy` (`FIFO` or `LIFO`).
    pub policy: Option<String>,
    /// Kinds whose file's algorithm has no schedule here: (kind, key, why). A system file
    /// names an algorithm for every kind (ASTRA-sim's `Switch.json`: `halvingDoubling`
    /// allgather), and a trace set runs few of them: refused only when the traces hold a
    /// collective of that kind and the scenario's `algorithm` names none.
    pub unavailable: Vec<(Kind, String, String)>,
    /// `roofline-enabled` (not 0) with `peak-perf` and `local-mem-bw`.
    pub roofline: Option<Roofline>,
    /// Kinds whose key lists several algorithms, one per network dimension: (kind, key,
    /// names). The scenario's `dims` gives the dimensions.
    pub per_dim: Vec<(Kind, String, Vec<String>)>,
    /// `collective-optimization`: `localBWAware` (true) or `baseline` (false).
    pub local_bw_aware: Option<bool>,
}

/// ASTRA-sim's roofline model of a GPU compute node (`Workload::issue_comp`, `Roofline`):
/// the node performs `num_ops` operations on `tensor_size` bytes at the lower of the peak
/// rate and the memory's bandwidth times the operational intensity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Roofline {
    /// `peak-perf`, in operations a second (the file gives TFLOPS).
    pub peak: f64,
    /// `local-mem-bw`, in bytes a second (the file gives GB/s).
    pub bandwidth: f64,
}

impl Roofline {
    /// The time of `num_ops` operations on `tensor_size` bytes, in whole nanoseconds cut
    /// down as ASTRA-sim's are. No operations, or no bytes (a node ASTRA-sim skips), take none.
    pub fn time(&self, num_ops: u64, tensor_size: u64) -> Time {
        if num_ops == 0 || tensor_size == 0 {
            return Time::ZERO;
        }
        let (ops, bytes) = (num_ops as f64, tensor_size as f64);
        let perf = (self.bandwidth * (ops / bytes)).min(self.peak);
        Time::from_ns((ops / perf * 1e9) as u64)
    }
}

/// The `*-implementation` keys and their kinds.
pub const IMPLEMENTATIONS: [(&str, Kind); 4] = [
    ("all-reduce-implementation", Kind::Allreduce),
    ("all-gather-implementation", Kind::Allgather),
    ("reduce-scatter-implementation", Kind::ReduceScatter),
    ("all-to-all-implementation", Kind::Alltoall),
];

/// Why an ASTRA-sim algorithm name gives no schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum Unavailable {
    /// A name ASTRA-sim does not know either, or a construct not modelled.
    Unknown(String),
    /// An algorithm of ASTRA-sim's that carries out no collective of this kind here.
    Here(String),
}

/// ASTRA-sim's name of an algorithm, for `kind`. Its `ring` all-to-all is carried out as the
/// direct all-to-all (docs/chakra.md says why).
pub fn astra_algorithm(kind: Kind, name: &str) -> std::result::Result<Algorithm, Unavailable> {
    for base in ["direct", "oneDirect"] {
        if let Some(w) = name.strip_prefix(base).filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())) {
            return Err(Unavailable::Unknown(format!(
                "{name}: a direct collective with a window of {w} pieces in flight is not modelled \
                 (`{base}` sends every piece at once)"
            )));
        }
    }
    let a = match (kind, name) {
        (Kind::Alltoall, "ring" | "oneRing" | "direct" | "oneDirect") => Algorithm::Direct,
        (_, "ring" | "oneRing") => Algorithm::Ring,
        (_, "doubleBinaryTree") => Algorithm::DoubleBinaryTree,
        (_, "halvingDoubling" | "oneHalvingDoubling") => Algorithm::HalvingDoubling,
        (_, "direct" | "oneDirect") => Algorithm::Direct,
        _ => {
            return Err(Unavailable::Unknown(format!(
                "unknown algorithm {name:?} (ring, oneRing, direct, oneDirect, doubleBinaryTree, halvingDoubling, oneHalvingDoubling)"
            )))
        }
    };
    if !kind.algorithms().contains(&a) {
        let ok: Vec<&str> = kind.algorithms().iter().map(|a| a.name()).collect();
        let verb = if ok.len() == 1 { "does" } else { "do" };
        return Err(Unavailable::Here(format!(
            "{name} carries out no {} here ({} {verb})",
            kind.name(),
            ok.join(", ")
        )));
    }
    Ok(a)
}

/// Reads the system file at `path`.
pub fn read_system(path: &Path) -> Result<System> {
    let text = read_text(path)?;
    parse_system(&text, path)
}

/// Parses a system file; errors name `path` and the key.
pub fn parse_system(text: &str, path: &Path) -> Result<System> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| Error::input(path, e.line(), "", format!("not JSON: {e}")))?;
    let Value::Object(map) = v else {
        return Err(Error::input(path, 0, "", "a system file is one JSON object"));
    };
    let mut s = System::default();
    let (mut roofline, mut peak, mut bandwidth) = (false, 0.0, 0.0);
    for (key, v) in &map {
        let err = |msg: String| Error::input(path, 0, key.clone(), msg);
        let count = || -> Result<u32> {
            v.as_u64()
                .filter(|&x| x >= 1)
                .and_then(|x| u32::try_from(x).ok())
                .ok_or_else(|| err(format!("expected a whole number of at least 1, got {v}")))
        };
        let zero = |what: &str| -> Result<()> {
            match v.as_f64() {
                Some(0.0) => Ok(()),
                _ => Err(err(format!("{v} is not modelled: only 0 ({what} off) is"))),
            }
        };
        if let Some(&(_, kind)) = IMPLEMENTATIONS.iter().find(|(k, _)| k == key) {
            let names: Vec<&str> = v.as_array().map_or(Vec::new(), |a| a.iter().filter_map(Value::as_str).collect());
            if names.is_empty() || v.as_array().is_some_and(|a| a.len() != names.len()) {
                return Err(err(format!("expected a list of algorithm names, one per network dimension, got {v}")));
            }
            let [one] = names[..] else {
                for name in &names {
                    if let Err(Unavailable::Unknown(why)) = astra_algorithm(kind, name) {
                        return Err(err(why));
                    }
                }
                s.per_dim.push((kind, key.clone(), names.iter().map(|n| n.to_string()).collect()));
                continue;
            };
            match astra_algorithm(kind, one) {
                Ok(a) => s.algorithms.push((kind, a)),
                Err(Unavailable::Here(why)) => s.unavailable.push((kind, key.clone(), why)),
                Err(Unavailable::Unknown(why)) => return Err(err(why)),
            }
            continue;
        }
        match key.as_str() {
            "preferred-dataset-splits" => s.splits = Some(count()?),
            "active-chunks-per-dimension" => s.active = Some(count()?),
            "endpoint-delay" => {
                let ns = v.as_f64().filter(|x| *x >= 0.0 && x.is_finite());
                let ns = ns.ok_or_else(|| err(format!("expected a delay in ns (ASTRA-sim's cycles), got {v}")))?;
                s.endpoint_delay = Some(Time((ns * 1000.0).round() as u64));
            }
            "scheduling-policy" => match v.as_str() {
                Some(p @ ("FIFO" | "LIFO")) => s.policy = Some(p.to_string()),
                _ => return Err(err(format!("expected \"FIFO\" or \"LIFO\", got {v}"))),
            },
            "local-mem-bw" | "peak-perf" => {
                let x = v.as_f64().ok_or_else(|| err(format!("expected a number, got {v}")))?;
                if key == "peak-perf" {
                    peak = x * 1e12;
                } else {
                    bandwidth = x * 1e9;
                }
            }
            // Only the shared memory bus reads LogGP's parameters and the local reduction delay
            // (ASTRA-sim's MemBus); with the bus off, as `model-shared-bus` 0 or absent is,
            // nothing does.
            "L" | "o" | "g" | "G" | "local-reduction-delay" => {
                if !v.is_number() {
                    return Err(err(format!("expected a number, got {v}")));
                }
            }
            "model-shared-bus" => zero("the shared memory bus")?,
            "replay-only" => zero("replay-only, where every node takes its recorded duration,")?,
            // ASTRA-sim's own logs and memory-usage files.
            "trace-enabled" | "track-local-mem" => {
                if !v.is_number() && !v.is_boolean() {
                    return Err(err(format!("expected 0 or 1, got {v}")));
                }
            }
            "local-mem-trace-filename" => {
                if !v.is_string() {
                    return Err(err(format!("expected a file name, got {v}")));
                }
            }
            "boost-mode" => zero("boost mode")?,
            "roofline-enabled" => {
                roofline = v.as_f64().ok_or_else(|| err(format!("expected 0 or 1, got {v}")))? != 0.0;
            }
            "collective-optimization" => match v.as_str() {
                Some(o @ ("baseline" | "localBWAware")) => s.local_bw_aware = Some(o == "localBWAware"),
                _ => return Err(err(format!("expected \"baseline\" or \"localBWAware\", got {v}"))),
            },
            k if k.ends_with("-implementation-custom") || k.ends_with("-implementation-chakra") => {
                return Err(err(
                    "custom collectives are not read from a system file: run their traces as a trace set of their own \
                     (path = the traces' prefix)"
                        .into(),
                ))
            }
            _ => return Err(err("not modelled by rdmalab (docs/chakra.md lists the keys it reads)".into())),
        }
    }
    if roofline {
        if !(peak > 0.0 && bandwidth > 0.0 && peak.is_finite() && bandwidth.is_finite()) {
            return Err(Error::input(
                path,
                0,
                "roofline-enabled",
                format!(
                    "the roofline model needs `peak-perf` (TFLOPS) and `local-mem-bw` (GB/s) above 0, got {} and {}",
                    peak / 1e12,
                    bandwidth / 1e9
                ),
            ));
        }
        s.roofline = Some(Roofline { peak, bandwidth });
    }
    Ok(s)
}

/// The ranks per dimension of ASTRA-sim's network file at `path`: an ns-3 or htsim JSON's
/// `logical-dims` (`["8", "2"]`), or the analytical YAML's `npus_count` (`[ 8, 2 ]`). Nothing
/// else in it is read: the fabric is the scenario's.
pub fn read_network_dims(path: &Path) -> Result<Vec<u32>> {
    let text = read_text(path)?;
    let dim = |v: &Value| match v {
        Value::String(x) => x.trim().parse::<u32>().ok(),
        _ => v.as_u64().and_then(|x| u32::try_from(x).ok()),
    };
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let key = "logical-dims";
        let list = v.get(key).ok_or_else(|| Error::input(path, 0, key, "a network file without `logical-dims`"))?;
        let dims: Option<Vec<u32>> = list.as_array().and_then(|a| a.iter().map(dim).collect());
        return match dims {
            Some(d) if !d.is_empty() && !d.contains(&0) => Ok(d),
            _ => Err(Error::input(path, 0, key, format!("expected a list of ranks per dimension, got {list}"))),
        };
    }
    let key = "npus_count";
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("npus_count:") else { continue };
        let rest = rest.split('#').next().unwrap_or("").trim();
        let inner = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
        let dims: Option<Vec<u32>> = inner.and_then(|r| r.split(',').map(|x| x.trim().parse::<u32>().ok()).collect());
        return match dims {
            Some(d) if !d.is_empty() && !d.contains(&0) => Ok(d),
            _ => Err(Error::input(path, i + 1, key, format!("expected a list such as [ 8, 2 ], got {rest:?}"))),
        };
    }
    Err(Error::input(path, 0, key, "neither JSON with `logical-dims` nor YAML with `npus_count`"))
}
