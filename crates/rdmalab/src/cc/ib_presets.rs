//! InfiniBand CC's published settings, by name: congestion control tables (`cct = "<name>"`),
//! whole parameter sets (`ib_cc_preset = "<name>"`), and annex A10's switch threshold level
//! (`threshold_level`, 0-15) mapped to a queue depth. Sources in `docs/model/infiniband.md#settings-by-name`,
//! "InfiniBand congestion control"; our own choices are the set `rdmalab_v1`.

pub use super::ib::{threshold_bytes, threshold_level, DEFAULT_PRESET, THRESHOLD_STEP};
use super::ib::{CctEntry, IbParams};
use crate::fabric::fecn::FecnParams;
use crate::units::Time;

/// The named tables, in the order the docs list them.
pub const CCT_NAMES: [&str; 5] = ["rdmalab_v1", "mellanox_default", "mellanox_llnl", "simula_optimal", "simula_llnl"];

/// The named parameter sets.
pub const PRESET_NAMES: [&str; 7] = [
    "rdmalab_v1",
    "opensm_default",
    "mellanox_ccmgr",
    "llnl_mellanox_default",
    "llnl_mellanox_llnl",
    "llnl_simula_optimal",
    "llnl_simula_llnl",
];

/// Our table (†): `ib::default_cct`.
fn rdmalab_v1_cct() -> Vec<CctEntry> {
    super::ib::default_cct()
}

/// The quadratic tables of LLNL's OpenSM CC configuration generator (perryh/ib-cc-tools-llnl,
/// `opensm-cc-conf-gen.rb`): 128 entries, entry i = shift : ⌊7·i² / (d² · k)⌋, with k in
/// thousandths (exact integer arithmetic; equal to the generator's floating point for every
/// entry of the four tables, checked in the tests below).
fn llnl_quadratic(shift: u8, d: u64, k_milli: u64) -> Vec<CctEntry> {
    (0..128u64).map(|i| CctEntry { shift, multiplier: (7000 * i * i / (d * d * k_milli)) as u16 }).collect()
}

/// The table named `name`, or None.
pub fn named_cct(name: &str) -> Option<Vec<CctEntry>> {
    Some(match name {
        "rdmalab_v1" => rdmalab_v1_cct(),
        "mellanox_default" => llnl_quadratic(0, 95, 218),
        "mellanox_llnl" => llnl_quadratic(0, 95, 408),
        "simula_optimal" => llnl_quadratic(3, 106, 218),
        "simula_llnl" => llnl_quadratic(3, 106, 408),
        _ => return None,
    })
}

/// The static name of a table (so that `IbParams` can keep it).
pub fn cct_static_name(name: &str) -> Option<&'static str> {
    CCT_NAMES.iter().copied().find(|n| *n == name)
}

/// A named set: the parameters it fixes and the keys it leaves open, which a scenario must
/// then give (a published set that does not fix them: the run must say what it chose).
#[derive(Clone, Debug)]
pub struct IbPreset {
    /// The parameters (the open keys hold `rdmalab_v1`'s values until given).
    pub params: IbParams,
    /// Keys the scenario must set, each with why the source leaves it open.
    pub open: &'static [(&'static str, &'static str)],
}

const MELLANOX_TIMER: &str =
    "Mellanox's congestion-control manager computes the timer from the fabric's size by an unpublished rule";
const LLNL_SWEPT: [(&str, &str); 3] = [
    ("threshold_level", "the LLNL generator sweeps it over 0, 1, 5, 9, 12, 15"),
    ("marking_rate", "the LLNL generator sweeps it over 0, 2, 4, 8, 15, 32, 48, 64, 80"),
    ("ccti_timer", "the LLNL generator sweeps it over 2, 4, 8, ..., 8192 units of 1.024 us"),
];

/// The set named `name`, or None.
pub fn preset(name: &str) -> Option<IbPreset> {
    let name: &'static str = PRESET_NAMES.iter().copied().find(|n| *n == name)?;
    let ours = IbParams::default();
    let with = |cct_name: &'static str, marking: FecnParams, timer: Time| {
        let cct = named_cct(cct_name).expect("a named table");
        IbParams {
            marking,
            ccti_increase: 1,
            ccti_limit: cct.len() as u16 - 1,
            ccti_min: 0,
            ccti_timer: timer,
            cct,
            preset: name,
            cct_name: Some(cct_name),
        }
    };
    let level = |l: u8| threshold_bytes(l).expect("a level");
    let (params, open): (IbParams, &'static [(&str, &str)]) = match name {
        "rdmalab_v1" => (ours, &[]),
        // OpenSM as shipped: `congestion_control FALSE`, threshold 0 (no marking), no table
        // (`ccti_limit` 0): a table of one entry at line rate, which no mark ever moves.
        "opensm_default" => {
            let marking = FecnParams { threshold: level(0), ..ours.marking };
            let cct = vec![CctEntry { shift: 0, multiplier: 0 }];
            (IbParams { marking, ccti_limit: 0, cct, preset: name, cct_name: None, ..ours }, &[])
        }
        // Mellanox's manager: threshold 0xf, marking_rate 0xa, packet_size 0x200 bytes,
        // ccti_increase 1, ccti_min 0; the table LLNL's generator calls its default.
        "mellanox_ccmgr" => {
            let marking = FecnParams { threshold: level(15), marking_rate: 10, packet_size: 512 };
            (with("mellanox_default", marking, ours.ccti_timer), &[("ccti_timer", MELLANOX_TIMER)])
        }
        // LLNL's generator: packet_size 1 credit (64 bytes), ccti_increase 1, ccti_min 0, one of
        // its four tables; threshold, marking rate and timer swept.
        _ => {
            let table = name.strip_prefix("llnl_").expect("an LLNL set");
            let marking = FecnParams { threshold: ours.marking.threshold, marking_rate: 0, packet_size: 64 };
            (with(cct_static_name(table).expect("an LLNL table"), marking, ours.ccti_timer), &LLNL_SWEPT)
        }
    };
    Some(IbPreset { params, open })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_depths() {
        assert_eq!(threshold_bytes(15), Some(16 * 1024));
        assert_eq!(threshold_bytes(1), Some(240 * 1024));
        assert_eq!(threshold_bytes(0), Some(u64::MAX));
        assert_eq!(threshold_bytes(16), None);
        assert!((0..=15).all(|l| threshold_level(threshold_bytes(l).unwrap()) == Some(l)));
        // Our default threshold is level 15's depth.
        assert_eq!(threshold_level(FecnParams::default().threshold), Some(15));
    }

    #[test]
    fn llnl_tables_match_their_formula() {
        // The generator's formula in floating point, entry by entry, and the facts one
        // reads off the "Mellanox default" table: 17 zero entries, a last delay of 57 packet
        // times at shift 0.
        for (name, shift, d, k) in [
            ("mellanox_default", 0u8, 95.0, 0.218),
            ("mellanox_llnl", 0, 95.0, 0.408),
            ("simula_optimal", 3, 106.0, 0.218),
            ("simula_llnl", 3, 106.0, 0.408),
        ] {
            let t = named_cct(name).unwrap();
            assert_eq!(t.len(), 128, "{name}");
            for (i, e) in t.iter().enumerate() {
                let want = ((i * i * 7) as f64 / (d * d) / k) as u16;
                assert_eq!((e.shift, e.multiplier), (shift, want), "{name}[{i}]");
            }
        }
        let m = named_cct("mellanox_default").unwrap();
        assert_eq!(m.iter().take_while(|e| e.multiplier == 0).count(), 17);
        assert_eq!(m[127].multiplier, 57);
        assert_eq!(named_cct("rdmalab_v1").unwrap(), IbParams::default().cct);
    }

    #[test]
    fn presets_are_consistent_and_the_default_is_ours() {
        for name in PRESET_NAMES {
            let p = preset(name).unwrap();
            assert!(p.params.check().is_ok(), "{name}");
            assert_eq!(p.params.preset, name);
        }
        assert_eq!(preset(DEFAULT_PRESET).unwrap().params, IbParams::default());
        assert!(preset("mellanox").is_none());
        assert_eq!(preset("mellanox_ccmgr").unwrap().open[0].0, "ccti_timer");
    }
}
