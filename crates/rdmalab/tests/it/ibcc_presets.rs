//! InfiniBand CC's published settings by name (`docs/model/infiniband.md`, "InfiniBand congestion
//! control", "Presets and named tables"): `ib_cc_preset`, `cct = "<name>"`,
//! `threshold_level` and `ccti_timer` in A10's units of 1.024 µs. Each form is checked
//! against the explicit values it stands for, on the parsed settings and on measured runs
//! (FCT records, rate samples, FECN/BECN counts identical), and bad input names its field.

use rdmalab::cc::ib::IbParams;
use rdmalab::cc::ib_presets::{named_cct, preset, threshold_bytes};
use rdmalab::scenario::Scenario;
use rdmalab::sim::Results;
use rdmalab::Time;

use super::ibcc::ib_cc_outputs;
use crate::fixtures;

/// A 3→1 incast of 1 MB flows at 100 Gb/s on the InfiniBand link layer with IB CC and
/// `params` as its `[fabric.cc_params]` lines.
fn toml(params: &str) -> String {
    let flows: Vec<String> =
        (1..=3).map(|s| format!("{{ src = {s}, dst = 0, size = 1000000, start = \"{}us\" }}", 2 * s)).collect();
    format!(
        "[topology]\nkind = \"star\"\nhosts = 4\n[[traffic]]\nkind = \"flows\"\nflows = [{}]\n\
         [fabric]\nlink_layer = \"infiniband\"\ncc = \"ib\"\nrate_sample_interval = \"2us\"\n\
         [fabric.cc_params]\n{params}\n",
        flows.join(", ")
    )
}

fn scenario(params: &str) -> Scenario {
    fixtures::scenario(&toml(params), "ibcc_presets.toml")
}

fn ib(s: &Scenario) -> IbParams {
    s.config.cc.ib_params().expect("IB CC").clone()
}

/// What a run measured (`ib_cc_outputs`), and its FECN marks.
fn measured(s: Scenario) -> (String, u64) {
    let r: Results = fixtures::run_finished(s);
    (ib_cc_outputs(&r), r.mechanism_count("fecn_marks"))
}

#[test]
fn our_set_is_the_default_and_named_forms_equal_their_values() {
    // No preset and `rdmalab_v1` are one setting: the same parameters, the same run.
    let (plain, named) = (scenario(""), scenario("ib_cc_preset = \"rdmalab_v1\""));
    assert_eq!(ib(&plain), IbParams::default());
    assert_eq!(ib(&named), ib(&plain));
    let (a, marks) = measured(plain);
    assert!(marks > 0, "the incast is marked under our set");
    assert_eq!(measured(named).0, a);

    // A named table is its entries; the explicit list differs only in the name it prints.
    let entries: Vec<String> =
        named_cct("mellanox_default").unwrap().iter().map(|e| format!("\"{}:{}\"", e.shift, e.multiplier)).collect();
    let explicit = scenario(&format!("cct = [{}]\nccti_timer = \"200us\"", entries.join(", ")));
    let by_name = scenario("cct = \"mellanox_default\"\nccti_timer = \"200us\"");
    let (x, y) = (ib(&explicit), ib(&by_name));
    assert_eq!((x.cct_name, y.cct_name), (None, Some("mellanox_default")));
    assert_eq!((&x.cct, x.ccti_limit), (&y.cct, y.ccti_limit));
    assert_eq!(y.ccti_limit, 127, "OpenSM's rule: the table's last entry");
    assert_eq!(measured(explicit).0, measured(by_name).0);

    // A10's timer unit: 49 units are 50.176 µs, exactly.
    let (units, time) = (scenario("ccti_timer = 49"), scenario("ccti_timer = \"50176ns\""));
    assert_eq!(ib(&units).ccti_timer, Time(49 * 1_024_000));
    assert_eq!(ib(&units), ib(&time));

    // A threshold level is its queue depth: level 14 is 32 KiB by our rule.
    let (level, bytes) = (scenario("threshold_level = 14"), scenario("threshold = 32768"));
    assert_eq!(ib(&level).marking.threshold, threshold_bytes(14).unwrap());
    assert_eq!(measured(level).0, measured(bytes).0);
}

#[test]
fn presets_set_their_published_values() {
    let m = ib(&scenario("ib_cc_preset = \"mellanox_ccmgr\"\nccti_timer = 49"));
    let p = &m.marking;
    // Mellanox's manager: threshold 0xf, marking_rate 0xa, packet_size 0x200; LLNL's table.
    assert_eq!((p.threshold, p.marking_rate, p.packet_size), (threshold_bytes(15).unwrap(), 10, 512));
    assert_eq!((m.ccti_increase, m.ccti_min, m.ccti_limit), (1, 0, 127));
    assert_eq!(
        (m.preset, m.cct_name, &m.cct),
        ("mellanox_ccmgr", Some("mellanox_default"), &named_cct("mellanox_default").unwrap())
    );
    let d = m.describe();
    assert!(
        d.contains("preset mellanox_ccmgr")
            && d.contains("cct mellanox_default (128 entries)")
            && d.contains("49.00 x 1.024 us"),
        "{d}"
    );
    // A key beside the preset overrides it, whatever its place in the file.
    let l =
        ib(&scenario("ccti_timer = 8\nib_cc_preset = \"llnl_simula_optimal\"\nmarking_rate = 4\nthreshold_level = 9"));
    assert_eq!(
        (l.marking.marking_rate, l.marking.threshold, l.marking.packet_size),
        (4, threshold_bytes(9).unwrap(), 64)
    );
    assert_eq!((l.ccti_timer, l.cct_name), (Time(8 * 1_024_000), Some("simula_optimal")));
    assert_eq!(preset("llnl_simula_optimal").unwrap().open.len(), 3);
}

#[test]
fn level_zero_and_opensm_defaults_mark_nothing() {
    // A10's level 0 is "no marking": the incast our set marks gets no FECN, and runs as
    // without congestion control's switch half (OpenSM as shipped: CC off).
    for params in ["threshold_level = 0", "ib_cc_preset = \"opensm_default\""] {
        let (_, marks) = measured(scenario(params));
        assert_eq!(marks, 0, "{params}");
    }
    assert_eq!(ib(&scenario("ib_cc_preset = \"opensm_default\"")).cct.len(), 1);
}

#[test]
fn bad_settings_name_their_field() {
    let cases = [
        ("threshold_level = 16", "fabric.cc_params.threshold_level", "[0, 15]"),
        ("threshold_level = 3\nthreshold = 1000", "fabric.cc_params.threshold_level", "not both"),
        ("cct = \"mellanox\"", "fabric.cc_params.cct", "\"mellanox_default\""),
        ("ib_cc_preset = \"ofed\"", "fabric.cc_params.ib_cc_preset", "\"mellanox_ccmgr\""),
        ("ib_cc_preset = 3", "fabric.cc_params.ib_cc_preset", "one of"),
        ("ccti_timer = 0", "fabric.cc_params.ccti_timer", "[1, 65535]"),
        ("ccti_timer = 65536", "fabric.cc_params.ccti_timer", "[1, 65535]"),
        ("ib_cc_preset = \"mellanox_ccmgr\"", "fabric.cc_params.ccti_timer", "unpublished"),
        (
            "ib_cc_preset = \"llnl_mellanox_llnl\"\nccti_timer = 8\nthreshold_level = 5",
            "fabric.cc_params.marking_rate",
            "sweeps",
        ),
    ];
    for (params, field, msg) in cases {
        let e = fixtures::input_error(&toml(params));
        assert!(e.contains(field) && e.contains(msg), "{params}: {e}");
    }
    // Under another congestion control the keys are not parameters.
    let e = fixtures::input_error(
        &toml("ib_cc_preset = \"rdmalab_v1\"")
            .replace("cc = \"ib\"", "cc = \"dcqcn\"")
            .replace("link_layer = \"infiniband\"\n", ""),
    );
    assert!(e.contains("fabric.cc_params.ib_cc_preset") && e.contains("not a parameter"), "{e}");
}
