//! SENDs posted by a staggered incast's application (`incast_rounds` with `stagger` and
//! `verb = "send"`) on receive queues (`sim/mech/rnr.rs`), against closed forms on a star
//! of 100 Gb/s links, delay d, the aggregator host 0.
//!
//! A serial round is a chain: message k's first packet reaches the aggregator G after message
//! k − 1's last packet was placed there (its receive completion, the grant's trip, the first
//! packet's trip; G measured on the WRITE run's chain), and its last one (n − 1)·W/C later.
//! On an SRQ of one WQE reposted D after each placement, message k's first packet is refused
//! J = ⌈(D − G)/c⌉⁺ times, c = a + r + τ as in `rnr.rs` (the packet's trip, the NAK's, the
//! timer), and everything after it in the round moves by J·c less a constant e under a
//! packet's time (the accepted packet is a resend, which leaves its sender unqueued): the
//! round's span grows by (m − 1)·(J·c − e) for m senders.

use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, StopReason};
use rdmalab::{Rate, Time};

use crate::fixtures;

const MTU: u64 = 1000;
/// Packets per message.
const PKTS: u64 = 10;
const DELAY_US: u64 = 1;
const PERIOD_US: u64 = 1000;

/// `m` senders (hosts 1..=m) sending `size` bytes to host 0 in `rounds` rounds with
/// `stagger`, `verb`, and `[rnic]` given by `rnic`.
fn toml(m: usize, size: u64, rounds: u32, stagger: &str, verb: &str, rnic: &str) -> String {
    let senders: Vec<String> = (1..=m).map(|h| h.to_string()).collect();
    format!(
        "stop_time = \"{}us\"\n[topology]\nkind = \"star\"\nhosts = {}\nrate = \"100Gbps\"\ndelay = \"{DELAY_US}us\"\n\
         [fabric]\nmtu = {MTU}\ncc = \"none\"\n{rnic}\n\
         [[traffic]]\nkind = \"incast_rounds\"\nsenders = [{}]\nreceiver = 0\nsize = {size}\n\
         period = \"{PERIOD_US}us\"\nrounds = {rounds}\njitter = \"0us\"\nstagger = \"{stagger}\"\nverb = \"{verb}\"\n",
        PERIOD_US * (rounds as u64 + 1),
        m + 1,
        senders.join(", ")
    )
}

fn srq(depth: u32, delay_us: u64, retry: u8) -> String {
    format!(
        "[rnic]\nsrq_depth = {depth}\nrecv_repost_delay = \"{delay_us}us\"\nmin_rnr_timer = 1\nrnr_retry = {retry}\n"
    )
}

fn run(text: &str) -> (Scenario, Results) {
    let s = fixtures::scenario(text, "rnr_stagger.toml");
    let mut sim = s.clone().simulation().expect("valid scenario");
    sim.run_to_end();
    (s, sim.results().expect("bytes conserved"))
}

/// Each round's message ends (start + FCT), in order of completion.
fn round_ends(r: &Results) -> Vec<Vec<u64>> {
    let mut by_round: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for x in &r.records {
        by_round.entry(x.start.0 / Time::from_us(PERIOD_US).0).or_default().push(x.start.0 + x.fct.0);
    }
    by_round.into_values().map(|mut v| (v.sort(), v).1).collect()
}

/// (one data packet's time W/C, the refusal's cycle c = a + r + τ with τ = code 1's 10 µs,
/// one ACK's time).
fn packet_and_cycle(s: &Scenario) -> (u64, u64, u64) {
    let (c, rate) = (&s.config, Rate(100_000_000_000));
    let w = c.timing.tx_time(rate, c.data_wire(MTU as u32) as u64).0;
    let ack = c.timing.tx_time(rate, c.ack_wire() as u64).0;
    let d = Time::from_us(DELAY_US).0;
    (w, (2 * w + 2 * d) + (2 * ack + 2 * d) + Time::from_us(10).0, ack)
}

#[test]
fn a_serial_incast_of_sends_keeps_one_wqe_busy_and_costs_nothing_when_reposted_at_once() {
    // One message in progress at a time: an SRQ of one WQE reposted at placement is never
    // short, so the SENDs run as the WRITEs do, to the picosecond.
    let write = fixtures::fct_text(&run(&toml(4, PKTS * MTU, 2, "serial", "write", "")).1);
    for depth in [1, 4] {
        let (_, send) = run(&toml(4, PKTS * MTU, 2, "serial", "send", &srq(depth, 0, 7)));
        assert_eq!(send.mechanism_count("rnr_naks"), 0, "SRQ of {depth}");
        assert_eq!(fixtures::fct_text(&send), write, "SRQ of {depth}");
    }
}

#[test]
fn a_serial_round_on_a_slow_srq_grows_by_the_refusals_closed_form() {
    // D = 10, 20, 35 µs, over a message's 0.84 µs and the chain's gap G (4.19 µs): each
    // message after a round's first is refused J = 1, 2, 3 times, and the rest of the round
    // waits for it. Against the WRITE run each message moves by J·c less one constant e, one
    // ACK's time (4.8 ns): the grant is a message, so the sender's NIC sends the grant's ACK
    // (ahead of data) just as the message is posted, and in the WRITE run the message's first
    // packet leaves behind it; the accepted SEND is a resend at the RNR timer's end, when that
    // ACK is long gone. Between two D the moves differ by exactly ΔJ·c.
    let (m, rounds) = (4usize, 2u32);
    let (s, write) = run(&toml(m, PKTS * MTU, rounds, "serial", "write", ""));
    let (w, cyc, ack) = packet_and_cycle(&s);
    let we = round_ends(&write);
    assert_eq!(we.len(), rounds as usize);
    let mut moved = Vec::new(); // per D: each message's move against its WRITE, by round
    for (d_us, want_j) in [(10u64, 1u64), (20, 2), (35, 3)] {
        let (_, send) = run(&toml(m, PKTS * MTU, rounds, "serial", "send", &srq(1, d_us, 7)));
        let se = round_ends(&send);
        assert_eq!(se.len(), rounds as usize, "every round completes");
        let (mut naks, mut shifts) = (0, Vec::new());
        for (wr, sr) in we.iter().zip(&se) {
            assert_eq!((wr.len(), sr.len()), (m, m));
            for k in 1..m {
                let g = wr[k] - wr[k - 1] - (PKTS - 1) * w;
                let j = Time::from_us(d_us).0.saturating_sub(g).div_ceil(cyc);
                assert_eq!(j, want_j, "D = {d_us} µs, G = {g} ps");
                naks += j;
                // The move of message k over message k − 1's: its own refusals.
                let own = (sr[k] - sr[k - 1]) - (wr[k] - wr[k - 1]);
                let e = j * cyc - own;
                assert_eq!(
                    e, ack,
                    "D = {d_us} µs, message {k}: J·c less its move is the grant's ACK ({w} ps a packet)"
                );
                shifts.push(own);
            }
            // A round's first message finds the WQE posted, so the round's span grows by the
            // sum of the moves, (m − 1)·(J·c − e).
            assert_eq!(sr[0], wr[0], "a round's first message is not refused");
        }
        assert_eq!(send.mechanism_count("rnr_naks"), naks, "D = {d_us} µs");
        moved.push(shifts);
    }
    for (j, shifts) in moved.iter().enumerate() {
        assert!(shifts.iter().all(|&x| x == (j as u64 + 1) * cyc - ack), "J = {}: {shifts:?}", j + 1);
    }
}

#[test]
fn a_paced_piece_is_a_send_of_its_own() {
    // Pieces follow each other on one connection: a queue of one WQE per connection reposted
    // at placement is never short, as the WRITEs run.
    let paced = |verb: &str, rnic: &str| {
        toml(2, 4 * PKTS * MTU, 1, "paced", verb, rnic)
            .replace("stagger = \"paced\"", "stagger = \"paced\"\npiece = 10000")
    };
    let write = fixtures::fct_text(&run(&paced("write", "")).1);
    let per_connection = "[rnic]\nrecv_queue_depth = 1\nrecv_repost_delay = \"0us\"\n";
    let (_, send) = run(&paced("send", per_connection));
    assert_eq!(send.mechanism_count("rnr_naks"), 0);
    assert_eq!(fixtures::fct_text(&send), write);
    // 2 senders × 4 pieces on an SRQ of 3 WQEs never reposted within the run: the first 3
    // pieces to arrive take them, then each sender's next piece is refused and, with
    // rnr_retry = 0, fails its WR. Were a message one SEND, 2 WQEs would do and none would be.
    let (_, short) = run(&paced("send", &srq(3, 10_000_000, 0)));
    assert_eq!(short.mechanism_count("rnr_naks"), 2);
    assert_eq!(short.mechanism_count("rnr_retry_exceeded"), 2);
    assert!(short.records.is_empty(), "neither transfer completes");
}

#[test]
fn sends_of_staggered_incasts_in_the_parallel_engine() {
    // Serial QPs are opened at setup, alike in every partition: the receiver's half knows them
    // for SENDs, and the run is the sequential one. A paced incast opens its QPs as it runs,
    // so the receiver's partition could not tell: refused (`Runner::auto` runs it whole).
    let serial = toml(4, PKTS * MTU, 2, "serial", "send", &srq(1, 20, 7));
    let (_, one) = run(&serial);
    let two = fixtures::run_threads(&serial, "rnr_stagger.toml", 2);
    assert!(one.mechanism_count("rnr_naks") > 0);
    assert_eq!(two.mechanism_count("rnr_naks"), one.mechanism_count("rnr_naks"));
    assert_eq!(fixtures::fct_text(&two), fixtures::fct_text(&one));
    let paced = toml(4, PKTS * MTU, 1, "paced", "send", &srq(1, 0, 7));
    let mut s = fixtures::scenario(&paced, "rnr_stagger.toml");
    s.config.threads = Some(2);
    let Err(e) = rdmalab::sim::parallel::Runner::new(s.clone()) else { panic!("paced SENDs accepted split") };
    let e = e.to_string();
    assert!(e.contains("threads") && e.contains("paced"), "{e}");
    s.config.threads = None;
    let mut whole = rdmalab::sim::parallel::Runner::auto(s).unwrap();
    assert_eq!(whole.run_to_end(), StopReason::Finished);
}

#[test]
fn send_is_accepted_for_every_stagger() {
    for stagger in ["none", "serial", "paced"] {
        let s = fixtures::scenario(&toml(2, PKTS * MTU, 1, stagger, "send", ""), "rnr_stagger.toml");
        assert!(s.flows.iter().all(|f| f.verb == rdmalab::workload::Verb::Send), "{stagger}");
    }
}
