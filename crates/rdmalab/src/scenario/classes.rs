//! `[[fabric.classes]]`: traffic classes (`fabric::classes`), one table per class to set.
//!
//! ```toml
//! [[fabric.classes]]
//! pg = 3                 # the class (1..7; 0 is the control class, always strict)
//! scheduler = "dwrr"     # strict | dwrr (default dwrr)
//! weight = 3             # dwrr only (default 1)
//! pfc = false            # default: fabric.lossless
//! ecn_kmin = 100000      # bytes; ecn_kmax, ecn_pmax too; default: the fabric-wide value
//! ```
//!
//! A class not listed is `dwrr` with weight 1, PFC as `fabric.lossless`, fabric-wide ECN.

use std::path::Path;

use serde::Deserialize;

use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::fabric::classes::{ClassTable, Scheduler};
use crate::fabric::ecn::EcnOverrides;
use crate::fabric::NUM_PRIOS;

/// One `[[fabric.classes]]` table as written.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// The class (priority group) these settings are for, 1..7.
    pub pg: u8,
    /// `strict` or `dwrr` (default).
    pub scheduler: Option<String>,
    /// DWRR weight (default 1).
    pub weight: Option<u32>,
    /// PFC on (default: `fabric.lossless`).
    pub pfc: Option<bool>,
    /// ECN Kmin in bytes on this class's queues (default: the fabric-wide value).
    pub ecn_kmin: Option<u64>,
    /// ECN Kmax in bytes on this class's queues (default: the fabric-wide value).
    pub ecn_kmax: Option<u64>,
    /// ECN Pmax on this class's queues, 0 to 1 (default: the fabric-wide value).
    pub ecn_pmax: Option<f64>,
}

/// The class table of `specs` (`None` when empty), checked against the rest of the fabric
/// settings in `c` (PFC default, ECN on or off, the fabric-wide thresholds). Errors name
/// `fabric.classes[i].FIELD`.
pub fn build(specs: &[ClassSpec], c: &SimConfig, file: &Path) -> Result<Option<Box<ClassTable>>> {
    if specs.is_empty() {
        return Ok(None);
    }
    let mut table = ClassTable::uniform(c.lossless);
    let mut seen = [None; NUM_PRIOS];
    for (i, s) in specs.iter().enumerate() {
        let f = |name: &str| format!("fabric.classes[{i}].{name}");
        let bad = |name: &str, msg: String| Err(Error::input(file, 0, f(name), msg));
        let q = s.pg as usize;
        if q == 0 || q >= NUM_PRIOS {
            let msg = format!("{q} is not a data class (1..{}; class 0 carries ACKs and PFC frames)", NUM_PRIOS - 1);
            return bad("pg", msg);
        }
        if let Some(j) = seen[q] {
            return bad("pg", format!("class {q} is already set by fabric.classes[{j}]"));
        }
        seen[q] = Some(i);
        let class = &mut table.classes[q];
        class.scheduler = match (s.scheduler.as_deref(), s.weight) {
            (Some("strict"), Some(_)) => return bad("weight", "a weight applies to `dwrr` classes only".into()),
            (Some("strict"), None) => Scheduler::Strict,
            (None | Some("dwrr"), Some(0)) => return bad("weight", "must be at least 1".into()),
            (None | Some("dwrr"), w) => Scheduler::Dwrr(w.unwrap_or(1)),
            (Some(other), _) => return bad("scheduler", format!("unknown scheduler `{other}` (known: strict, dwrr)")),
        };
        if let Some(p) = s.pfc {
            class.pfc = p;
        }
        class.ecn = class_ecn(s, c, file, &f)?;
    }
    Ok(Some(Box::new(table)))
}

/// The class's ECN fields, checked like the fabric-wide ones: ECN must be on, Pmax a
/// probability, Kmin no larger than Kmax at any configured rate.
fn class_ecn(s: &ClassSpec, c: &SimConfig, file: &Path, f: &dyn Fn(&str) -> String) -> Result<EcnOverrides> {
    let o = EcnOverrides { kmin: s.ecn_kmin, kmax: s.ecn_kmax, pmax: s.ecn_pmax };
    if o == EcnOverrides::default() {
        return Ok(o);
    }
    let first = if o.kmin.is_some() {
        "ecn_kmin"
    } else if o.kmax.is_some() {
        "ecn_kmax"
    } else {
        "ecn_pmax"
    };
    let input = |field: &str, msg: String| Error::input(file, 0, f(field), msg);
    let Some(ecn) = &c.ecn else {
        return Err(input(first, "ECN marking is off (`fabric.ecn = false`)".into()));
    };
    if let Some(p) = o.pmax {
        if !(0.0..=1.0).contains(&p) {
            return Err(input("ecn_pmax", format!("must be in [0, 1], got {p}")));
        }
    }
    for (rate, p) in &ecn.by_rate {
        let p = o.apply(*p);
        if p.kmin > p.kmax {
            let field = if o.kmin.is_some() { "ecn_kmin" } else { "ecn_kmax" };
            return Err(input(field, format!("Kmin {} > Kmax {} (at {rate})", p.kmin, p.kmax)));
        }
    }
    Ok(o)
}
