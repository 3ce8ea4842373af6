//! `rdmalab hpcc`'s m4 dialect (docs/hpcc-dialects.md): m4's keys, flow file and FCT file,
//! checked against the fork's own numbers in closed form; keys it does not model refused by
//! name.

use std::path::{Path, PathBuf};

use rdmalab::formats::hpcc_config::{parse_config_as, Dialect};
use rdmalab::formats::hpcc_m4::write_fct_line;
use rdmalab::hpcc_compat::load;
use rdmalab::sim::Simulation;
use rdmalab::units::Time;

/// Host 0, switches 1 to 5 in a line, host 6: six 10 Gb/s links of 1 µs, and `flows`.
fn chain_files(name: &str, flows: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rdmalab-m4-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let links: String = (0..6).map(|i| format!("{i} {} 10Gbps 1000ns 0\n", i + 1)).collect();
    std::fs::write(dir.join("topo.txt"), format!("7 5 6\n1 2 3 4 5\n{links}")).unwrap();
    std::fs::write(dir.join("flows.txt"), flows).unwrap();
    dir
}

/// An m4 config as its fork's scripts write them (`eval_test_demo/2`'s values), plus `keys`.
fn m4_config(dir: &Path, keys: &str) -> String {
    format!(
        "ENABLE_QCN 1\nENABLE_PFC 1.0\nPACKET_PAYLOAD_SIZE 1000\nTOPOLOGY_FILE {}\nFLOW_FILE {}\n\
         SIMULATOR_STOP_TIME 3\nRATE_AI 10.0Mb/s\nRATE_HAI 50.0Mb/s\nMIN_RATE 1000Mb/s\nMAX_RATE 10000Mb/s\n\
         TIMELY_T_HIGH 120215.83345688184\nTIMELY_T_LOW 53582.837700567\nTIMELY_BETA 0.8\nL2_CHUNK_SIZE 4000\n\
         L2_ACK_INTERVAL 1\nHAS_WIN 1\nVAR_WIN 1\nACK_HIGH_PRIO 1\nENABLE_TRACE 0\n\
         KMAX_MAP 1 10000000000 16\nKMIN_MAP 1 10000000000 4\nPMAX_MAP 1 10000000000 0.20\n\
         BUFFER_SIZE 126.1501585627982\nFIXED_WIN 5290.0\nBASE_RTT 14400\nN_CLIENTS_PER_RACK_FOR_CLOSED_LOOP 16\n{keys}",
        dir.join("topo.txt").display(),
        dir.join("flows.txt").display()
    )
}

/// The fork's FCT lines of a run of `text`.
fn m4_lines(dir: &Path, text: &str) -> Vec<String> {
    let cfg = parse_config_as(text, &dir.join("config.txt"), Dialect::M4).expect("parses");
    let (sc, m4) = load(&cfg).expect("builds");
    let m4 = m4.expect("the m4 dialect's outputs");
    let mut sim = Simulation::new(sc.topology, sc.flows, sc.config).expect("valid");
    sim.run_to_end();
    let res = sim.results().expect("conserved");
    let mut lines = Vec::new();
    for r in &res.records {
        let mut out = Vec::new();
        let i = r.flow as usize;
        write_fct_line(&mut out, m4.ids[i], r, m4.standalone_ns[i]).unwrap();
        lines.push(String::from_utf8(out).unwrap().trim_end().to_string());
    }
    lines
}

/// m4's published line for a 170 B flow over six 10 Gb/s hops (eval_test_demo/2, flow 0):
/// the receiver holds the last byte after 6 × (1,000 ns + floor(226 B × 0.8 ns/B)) = 7,080 ns
/// (TIMELY's packets carry an 8-byte timestamp on the 48 header bytes), and the fork's
/// standalone FCT is 6,000 ns + 6 × floor(218 B × 0.8) = 7,044 ns. The reference dialect's FCT
/// would wait for the ACK.
#[test]
fn a_small_flow_completes_when_the_receiver_has_its_last_byte() {
    let dir = chain_files("closed", "1\n42 0 6 3 100 170 1\n");
    for cc in [7, 8] {
        let lines = m4_lines(&dir, &m4_config(&dir, &format!("CC_MODE {cc}\n")));
        // DCTCP's packets carry no INT bytes: 6 × (1,000 + floor(218 × 0.8)).
        let fct = if cc == 7 { 7080 } else { 6000 + 6 * 174 };
        assert_eq!(lines, [format!("42 0b000001 0b000601 10000 100 170 1000000000 {fct} 7044")], "CC_MODE {cc}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn m4_keys_set_the_forks_window_buffer_and_timely_thresholds() {
    let dir = chain_files("keys", "2\n7 0 6 3 100 5000 1\n9 6 0 3 100 5000 1\n");
    let text = m4_config(&dir, "CC_MODE 7\nMAX_INFLIGHT_FLOWS 0\n");
    let cfg = parse_config_as(&text, &dir.join("c.txt"), Dialect::M4).unwrap();
    let (sc, m4) = load(&cfg).unwrap();
    let c = &sc.config;
    assert_eq!((c.buffer_bytes, c.lossless, c.fct_at_receiver), (126 * 1024, true, true));
    // BASE_RTT 14400 is replaced by twice the largest host-to-host delay, as the fork does.
    assert_eq!(c.global_path, Some((Time::from_us(12), 5290)));
    assert!(c.window.enabled && c.window.variable && c.window.global && c.ack_prio_at_switches);
    let rdmalab::cc::CcConfig::Timely(t) = &c.cc else { panic!("TIMELY") };
    assert_eq!((t.t_high_ns, t.t_low_ns, t.beta), (120_215, 53_582, 0.8));
    assert_eq!(m4.unwrap().ids, [7, 9]);
    let lossy = parse_config_as(&text.replace("ENABLE_PFC 1.0", "ENABLE_PFC 0"), &dir.join("c.txt"), Dialect::M4);
    assert!(!load(&lossy.unwrap()).unwrap().0.config.lossless);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn keys_outside_the_dialect_are_refused_by_name() {
    let dir = chain_files("bad", "2\n7 0 6 3 100 5000 1\n9 6 0 3 100 5000 1\n");
    let base = m4_config(&dir, "CC_MODE 7\n");
    let e = parse_config_as(&base, &dir.join("c.txt"), Dialect::Reference).unwrap_err().to_string();
    assert!(e.contains("c.txt:2: field `ENABLE_PFC`") && e.contains("--dialect m4"), "{e}");
    let cases = [
        ("MAX_INFLIGHT_FLOWS 1\n", "MAX_INFLIGHT_FLOWS", "closed loop"),
        ("MAX_RATE 1Gbps\n", "MAX_RATE", "does not model"),
        ("IOFD_ENABLE 1\n", "IOFD_ENABLE", "not a key of the m4 dialect"),
    ];
    for (extra, key, msg) in cases {
        let text = format!("{}{extra}", base.replace("MAX_RATE 10000Mb/s\n", ""));
        let e = parse_config_as(&text, &dir.join("c.txt"), Dialect::M4).and_then(|c| load(&c).map(|_| ()));
        let e = e.unwrap_err().to_string();
        assert!(e.contains(&format!("field `{key}`")) && e.contains(msg), "{extra}: {e}");
    }
    std::fs::remove_dir_all(dir).ok();
}
