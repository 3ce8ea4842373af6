//! Fair arbitration among a switch egress's input ports
//! (`fabric.egress_arbitration = "input_fair"`) and static per-port buffers
//! (`fabric.buffer_model = "per_port"`).
//!
//! Checked against closed forms: deficit round robin among backlogged inputs gives each the
//! same bytes (Shreedhar & Varghese 1995: the gap stays below one quantum plus one packet per
//! round), so two backlogged inputs each get half of the egress whatever they carry, and an
//! idle input takes nothing; a port with a static buffer decides on its own occupancy, so
//! what another port of the same switch holds changes none of its drops.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::Results;
use rdmalab::Time;

use crate::fixtures::{input_error, line_of, run_toml_with};

/// A dumbbell of 9 hosts per side (left 0..9, right 9..18) whose bottleneck runs at
/// 400 Gb/s, no congestion control: hosts 0..8 send one flow each to host 9 over the
/// bottleneck (8 QPs on the right switch's bottleneck input), host 10 sends one (1 QP on its
/// own input); host 11, a third input of the same egress, sends nothing. The right switch's
/// port towards host 9 (100 Gb/s) is where the inputs meet.
fn eight_against_one(arbitration: &str) -> (String, Results) {
    let flows: Vec<String> =
        (0..8).chain([10]).map(|s| format!("{{ src = {s}, dst = 9, size = 1000000000 }}")).collect();
    let toml = format!(
        "stop_time = \"3ms\"\n[topology]\nkind = \"dumbbell\"\nhosts_per_side = 9\nbottleneck_rate = \"400Gbps\"\n\
         [[traffic]]\nkind = \"flows\"\nflows = [{}]\n\
         [fabric]\ncc = \"none\"\nbuffer_mb = 2\nlink_sample_interval = \"500us\"\n\
         egress_arbitration = \"{arbitration}\"\n",
        flows.join(", ")
    );
    let r = run_toml_with(&toml, |_| {});
    (toml, r)
}

/// Bytes the right switch received per input from 1 ms to the end (3 ms), once the queues
/// have built up: through the bottleneck (what the left switch sent on it) and from hosts
/// 10 and 11 (what their NICs sent).
fn input_bytes(toml: &str, r: &Results) -> [u64; 3] {
    let s = Scenario::from_toml(toml, Path::new("t.toml")).unwrap();
    let t = &s.topology;
    let left_switch = 18;
    let bottleneck = *t.nodes[left_switch].ports.last().unwrap();
    let uplink = |h: usize| t.nodes[h].ports[0];
    let after_1ms = |p: rdmalab::PortId| {
        r.link_samples.iter().filter(|s| s.1 == p && s.0 > Time::from_us(1000)).map(|s| s.2).sum::<u64>()
    };
    [bottleneck, uplink(10), uplink(11)].map(after_1ms)
}

#[test]
fn input_fair_splits_an_egress_evenly_between_eight_qps_and_one() {
    let (toml, r) = eight_against_one("input_fair");
    let [eight, one, idle] = input_bytes(&toml, &r);
    let share = eight as f64 / (eight + one) as f64;
    assert!((share - 0.5).abs() <= 0.02, "8-QP input's share {share:.4} ({eight} against {one} bytes)");
    // The idle third input takes nothing and costs nothing: the two fill the link (2 ms at
    // 100 Gb/s, but for the queues' swing).
    assert_eq!(idle, 0);
    assert!((eight + one) as f64 > 0.99 * 25e6, "{} bytes", eight + one);
    assert_eq!(r.counters.drops, 0);
}

#[test]
fn fifo_gives_the_faster_aggregate_input_more() {
    // The control: the same run in arrival order. The bottleneck input delivers at up to
    // 400 Gb/s and gets the larger PFC threshold, so it holds most of the egress queue.
    let (toml, r) = eight_against_one("fifo");
    let [eight, one, _] = input_bytes(&toml, &r);
    let share = eight as f64 / (eight + one) as f64;
    assert!(share > 0.6, "8-QP input's share under FIFO {share:.4}");
}

#[test]
fn three_inputs_one_idle_split_fifty_fifty() {
    // `eight_against_one`'s egress has a third input (host 11) that carries nothing: the
    // round robin skips it, and what the other two get is half each.
    let (toml, r) = eight_against_one("input_fair");
    let s = Scenario::from_toml(&toml, Path::new("t.toml")).unwrap();
    assert_eq!(s.topology.nodes[19].ports.len(), 10, "the right switch: 9 hosts and the bottleneck");
    let [eight, one, idle] = input_bytes(&toml, &r);
    assert_eq!(idle, 0);
    assert!((one as f64 / (eight + one) as f64 - 0.5).abs() <= 0.02, "{eight} against {one}");
}

/// A lossy star of 6 hosts (switch 6), no congestion control, 1 MiB of buffer: hosts 4 and
/// 5 send to host 3 (a 2:1 incast on the switch's port towards 3), and with `other` hosts 1
/// and 2 do the same to host 0. Returns, for the port towards host 3, the drops of its two
/// inputs and what it sent, and the run's total drops.
fn incast_beside_another(model: &str, other: bool) -> ([u64; 3], u64) {
    let mut pairs = vec![(4, 3), (5, 3)];
    if other {
        pairs.extend([(1, 0), (2, 0)]);
    }
    let flows: Vec<String> =
        pairs.iter().map(|(s, d)| format!("{{ src = {s}, dst = {d}, size = 1000000000 }}")).collect();
    let toml = format!(
        "stop_time = \"1ms\"\n[topology]\nkind = \"star\"\nhosts = 6\n\
         [[traffic]]\nkind = \"flows\"\nflows = [{}]\n\
         [fabric]\ncc = \"none\"\nlossless = false\nbuffer_mb = 1\nbuffer_model = \"{model}\"\n",
        flows.join(", ")
    );
    let r = run_toml_with(&toml, |_| {});
    let t = Scenario::from_toml(&toml, Path::new("t.toml")).unwrap().topology;
    let at_switch = |h: usize| t.ports[t.nodes[h].ports[0].idx()].peer.idx();
    ([r.ports[at_switch(4)].drops, r.ports[at_switch(5)].drops, r.ports[at_switch(3)].tx_bytes], r.counters.drops)
}

#[test]
fn a_per_port_buffer_admits_the_same_whatever_another_port_holds() {
    let (alone, all_alone) = incast_beside_another("per_port", false);
    let (beside, all_beside) = incast_beside_another("per_port", true);
    assert!(alone[0] + alone[1] > 0, "the 2:1 incast overflows its port: {alone:?}");
    assert!(all_beside > all_alone, "the other incast drops too ({all_beside} against {all_alone})");
    assert_eq!(alone, beside, "drops and bytes at the port towards host 3");
}

#[test]
fn a_shared_buffer_admits_less_when_another_port_fills() {
    // The control: the pool's dynamic threshold falls as the other incast fills it.
    let (alone, _) = incast_beside_another("shared", false);
    let (beside, _) = incast_beside_another("shared", true);
    assert!(beside[0] + beside[1] > alone[0] + alone[1], "drops {alone:?} alone, {beside:?} beside");
}

#[test]
fn an_egress_dynamic_threshold_admits_less_when_another_port_fills() {
    // One pool: a port alone may grow to alpha B / (1 + alpha), beside a second full port
    // to alpha B / (1 + 2 alpha), so the same incast loses more beside the other.
    let (alone, _) = incast_beside_another("egress_dynamic", false);
    let (beside, _) = incast_beside_another("egress_dynamic", true);
    assert!(beside[0] + beside[1] > alone[0] + alone[1], "drops {alone:?} alone, {beside:?} beside");
}

#[test]
fn per_port_buffers_pause_instead_of_dropping_when_lossless() {
    // 4:1 incast into one port of 64 KiB: PFC pauses the four inputs and nothing is lost.
    let toml = "stop_time = \"1ms\"\n[topology]\nkind = \"star\"\nhosts = 5\n\
        [[traffic]]\nkind = \"incast\"\nsenders = [1, 2, 3, 4]\nreceiver = 0\nsize = 1000000\n\
        [fabric]\ncc = \"none\"\nbuffer_model = \"per_port\"\nport_buffer_kb = 64\n";
    let r = run_toml_with(toml, |_| {});
    assert_eq!(r.counters.drops, 0);
    assert!(r.counters.pauses >= 4 && r.counters.resumes >= 4, "{:?}", r.counters);
    assert_eq!(r.records.len(), 4, "the incast completes");
    let dynamic = toml.replace(
        "buffer_model = \"per_port\"\nport_buffer_kb = 64",
        "buffer_mb = 0.25\nbuffer_model = \"egress_dynamic\"",
    );
    let r = run_toml_with(&dynamic, |_| {});
    assert_eq!(r.counters.drops, 0);
    assert!(r.counters.pauses >= 4 && r.counters.resumes >= 4, "egress_dynamic: {:?}", r.counters);
    assert_eq!(r.records.len(), 4, "the incast completes under egress_dynamic");
}

#[test]
fn a_port_smaller_than_the_resume_offset_resumes_its_inputs_once_empty() {
    // 0.3 MB on a leaf-spine whose headroom takes the whole pool: an egress port's dynamic
    // size is 0, so every packet pauses its input. The port must let its inputs go once it has
    // drained; before, they stayed paused with nothing queued and the run stalled.
    let toml = "stop_time = \"3ms\"\n[topology]\nkind = \"leaf_spine\"\nleaves = 4\nspines = 3\n\
        hosts_per_leaf = 4\nhost_rate = \"100Gbps\"\nfabric_rate = \"200Gbps\"\ndelay = \"2us\"\n\
        [[traffic]]\nkind = \"incast\"\nsenders = [6, 7, 8]\nreceiver = 5\nsize = 20000\n\
        [fabric]\ncc = \"none\"\nbuffer_mb = 0.3\nbuffer_model = \"egress_dynamic\"\ndt_alpha = 1.0\n";
    let r = run_toml_with(toml, |_| {});
    assert!(r.counters.pauses > 0, "the pool is all headroom: {:?}", r.counters);
    assert_eq!((r.counters.drops, r.records.len()), (0, 3), "{:?}", r.counters);
    assert_eq!(r.counters.pauses, r.counters.resumes, "every PAUSE is lifted: {:?}", r.counters);
}

#[test]
fn bad_switch_model_settings_name_file_line_and_field() {
    let base = "[topology]\nkind = \"star\"\nhosts = 3\n[[traffic]]\nkind = \"flows\"\n\
                flows = [{ src = 1, dst = 0, size = 1000 }]\n[fabric]\n";
    let cases = [
        ("egress_arbitration = \"fair\"", "fabric.egress_arbitration", "unknown variant"),
        ("buffer_model = \"static\"", "fabric.buffer_model", "unknown variant"),
        ("port_buffer_kb = 64", "fabric.port_buffer_kb", "needs `buffer_model = \"per_port\"`"),
        ("buffer_model = \"per_port\"\nport_buffer_kb = 0", "fabric.port_buffer_kb", "positive"),
        ("buffer_model = \"per_port\"\nport_buffer_kb = 0.5", "fabric.port_buffer_kb", "less than one"),
        ("buffer_model = \"per_port\"\nbuffer_mb = 0.001", "fabric.buffer_mb", "less than one"),
        ("buffer_model = \"per_port\"\n[fabric.iofd]", "fabric.buffer_model", "iofd"),
        ("dt_alpha = 1", "fabric.dt_alpha", "needs `buffer_model = \"egress_dynamic\"`"),
        ("buffer_model = \"egress_dynamic\"\ndt_alpha = -2", "fabric.dt_alpha", "(0, 1024]"),
        ("buffer_model = \"egress_dynamic\"\n[fabric.iofd]", "fabric.buffer_model", "iofd"),
    ];
    for (tail, field, what) in cases {
        let toml = format!("{base}{tail}\n");
        let e = input_error(&toml);
        let needle = tail.lines().find(|l| l.starts_with(field.trim_start_matches("fabric."))).unwrap_or(tail);
        let want = format!("bad.toml:{}", line_of(&toml, needle));
        assert!(e.starts_with(&want) && e.contains(field) && e.contains(what), "want {want}, {field}, {what}: {e}");
    }
}
