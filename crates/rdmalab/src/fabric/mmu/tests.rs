//! The shared buffer's tests: headroom, classes' records, thresholds, PAUSE and RESUME,
//! lossy classes.
use super::*;

fn mmu(lossless: bool) -> SwitchMmu {
    let cfg = MmuConfig { buffer: 200_000, lossless, ..MmuConfig::default() };
    SwitchMmu::new(cfg, &[(Rate::gbps(100), 1000), (Rate::gbps(100), 1000)])
}

#[test]
fn headroom_and_shift_follow_the_reference() {
    let m = SwitchMmu::new(MmuConfig::default(), &[(Rate::gbps(100), 1000), (Rate::gbps(400), 1000)]);
    assert_eq!(m.params.iter().map(|p| p.headroom).collect::<Vec<_>>(), vec![37_500, 150_000]);
    assert_eq!((0..m.params.len()).map(|p| m.record(p, 5).shift).collect::<Vec<_>>(), vec![3, 1]);
}

#[test]
fn a_class_gets_its_records_with_its_first_packet() {
    // No records before a packet; then one per port for each class that arrived, the
    // bytes of a class kept when another joins, and a class never seen reads as empty
    // with its port's parameters.
    let mut m = mmu(true);
    assert!(m.acct.is_empty());
    assert_eq!(m.admit(1, 3, 1000), Admission::Accept { pause: false });
    assert_eq!((m.acct.len(), m.stride), (2, 1));
    assert_eq!(m.admit(0, 1, 64), Admission::Accept { pause: false });
    assert_eq!((m.acct.len(), m.stride, m.slot[3], m.slot[1]), (4, 2, 0, 1));
    assert_eq!((m.ingress_bytes(1), m.ingress_bytes(0), m.record(1, 3).ingress), (1000, 64, 1000));
    let never = m.record(0, 6);
    assert_eq!((never.ingress, never.headroom, never.shift, never.pfc), (0, 37_500, 3, true));
    assert!(!m.release(1, 3, 1000));
    assert_eq!((m.ingress_bytes(1), m.shared_used()), (0, 0));
}

#[test]
fn large_frames_get_the_round_trip_and_three_frames() {
    // 9,000-byte frames and 48 bytes of headers: 2 x 12,500 + 3 x 9,048 + 64 at 100 Gb/s
    // and 1 us, more than the reference's 3 x 12,500; at 400 Gb/s 3 x 50,000 is more; a
    // zero-delay link keeps the three frames and the PAUSE.
    let cfg = MmuConfig { serialisation: 3 * 9048 + 64, ..MmuConfig::default() };
    let links = [(Rate::gbps(100), 1000), (Rate::gbps(400), 1000), (Rate::gbps(10), 0)];
    let m = SwitchMmu::new(cfg, &links);
    assert_eq!(m.params.iter().map(|p| p.headroom).collect::<Vec<_>>(), vec![52_208, 150_000, 27_208]);
    let set = SwitchMmu::new(MmuConfig { headroom: Some(0), ..cfg }, &links);
    assert!(set.params.iter().all(|p| p.headroom == 0));
}

#[test]
fn over_threshold_as_admit_decides() {
    for lossless in [true, false] {
        let mut m = mmu(lossless);
        let mut over = false;
        for _ in 0..200 {
            let predicted = m.over_threshold(0, 3, 1000);
            let hdrm = m.record(0, 3).hdrm;
            let got = m.admit(0, 3, 1000);
            if lossless {
                // Over the threshold: headroom (or, once that is full, a drop).
                let took_hdrm = got == Admission::Drop || m.record(0, 3).hdrm > hdrm;
                assert_eq!(predicted, took_hdrm);
            } else {
                assert_eq!(predicted, got == Admission::Drop);
            }
            over |= predicted;
        }
        assert!(over, "200 kB into a 200 kB buffer must go over the threshold");
        assert_eq!(m.lossless(3), lossless);
    }
}

#[test]
fn pauses_at_threshold_and_resumes_after_draining() {
    let mut m = mmu(true);
    // buffer 200000 - hdrm 75000 - rsrv 8192 = 116808 free; Th = 14601 at shift 3.
    let mut paused_at = None;
    for i in 0..40 {
        if let Admission::Accept { pause: true } = m.admit(0, 3, 1000) {
            paused_at = Some(i);
            break;
        }
    }
    let k = paused_at.expect("must pause before 40 KB") + 1;
    assert!(m.record(0, 3).hdrm > 0 || m.shared_of(0, 3) >= m.threshold(0));
    let mut resumed = false;
    for _ in 0..k {
        resumed |= m.release(0, 3, 1000);
    }
    assert!(resumed);
    assert_eq!(m.shared_used(), 0);
    assert_eq!(m.ingress_bytes(0), 0);
}

#[test]
fn lossy_drops_instead_of_pausing() {
    let mut m = mmu(false);
    let mut drops = 0;
    for _ in 0..100 {
        match m.admit(0, 3, 1000) {
            Admission::Drop => drops += 1,
            Admission::Accept { pause } => assert!(!pause),
        }
    }
    assert!(drops > 0);
}

#[test]
fn a_lossy_class_drops_beside_a_lossless_one() {
    // Class 3 lossless, class 4 lossy, on the same ingress port and shared buffer.
    let cfg = MmuConfig { buffer: 200_000, pfc_classes: Some(1 << 3), ..MmuConfig::default() };
    let mut m = SwitchMmu::new(cfg, &[(Rate::gbps(100), 1000), (Rate::gbps(100), 1000)]);
    let (mut drops, mut pauses) = ([0; 2], [0; 2]);
    // 40 KB each: more than class 4's share of the buffer, less than class 3's share
    // plus its headroom (the upstream would have stopped at the PAUSE anyway).
    for _ in 0..40 {
        for (k, q) in [3, 4].into_iter().enumerate() {
            match m.admit(0, q, 1000) {
                Admission::Drop => drops[k] += 1,
                Admission::Accept { pause } => pauses[k] += pause as u32,
            }
        }
    }
    assert_eq!((drops[0], pauses[0]), (0, 1), "class 3 pauses once, then lives on headroom");
    assert!(drops[1] > 0 && pauses[1] == 0, "class 4: {drops:?} {pauses:?}");
    assert_eq!(m.record(0, 4).hdrm, 0, "a lossy class never takes headroom");
}

#[test]
fn passes_only_where_admission_and_release_change_nothing() {
    // At every fill level on the way to a PAUSE (and a drop) and back, for a lossless
    // and a lossy class: where `passes` says yes, admitting and releasing the packet at
    // once is accepted without a PAUSE, sends no RESUME and leaves every count as it
    // was; where it says no, one of those fails (or the class has no records yet).
    for lossless in [true, false] {
        let mut m = mmu(lossless);
        let (mut yes, mut no) = (0, 0);
        for step in 0..120 {
            for size in [64, 1000, 9000] {
                let says = m.passes(1, 3, size);
                let (before, mut t) = (m.record(1, 3), m.clone());
                let admitted = t.admit_shared(1, 3, size);
                let into_headroom = t.record(1, 3).hdrm != before.hdrm;
                let resumed = admitted != Admission::Drop && t.release_shared(1, 3, size);
                let unchanged = format!("{:?} {}", t.acct, t.shared_used) == format!("{:?} {}", m.acct, m.shared_used);
                let quiet = admitted == Admission::Accept { pause: false } && !resumed && unchanged;
                let at = format!("lossless {lossless}, step {step}, {size} B: {admitted:?}, {before:?}");
                assert!(!says || quiet, "{at}");
                // Exactly the cases its note names: records, no headroom held or taken, no
                // PAUSE sent or in force.
                let named = m.slot[3] != NO_SLOT && before.hdrm == 0 && !before.paused && !into_headroom;
                assert_eq!(says, named && admitted == Admission::Accept { pause: false }, "{at}");
                (yes, no) = if says { (yes + 1, no) } else { (yes, no + 1) };
            }
            // Fill port 0 and then port 1 (the shared buffer they share), then drain.
            let (p, admit) = (usize::from(step >= 40), step < 80);
            if admit {
                let _ = m.admit(p, 3, 1000);
            } else {
                m.release(p % 2, 3, m.record(p % 2, 3).ingress.min(1000).max(m.record(p % 2, 3).hdrm.min(1000)));
            }
        }
        assert!(yes > 0 && no > 0, "lossless {lossless}: {yes} yes, {no} no");
    }
}

#[test]
fn what_a_hop_reads_of_the_switch_is_one_line() {
    use std::mem::offset_of;
    assert_eq!(std::mem::align_of::<SwitchMmu>(), 64);
    let hot = [
        offset_of!(SwitchMmu, pool),
        offset_of!(SwitchMmu, shared_used),
        offset_of!(SwitchMmu, reserve),
        offset_of!(SwitchMmu, acct),
        offset_of!(SwitchMmu, slot),
        offset_of!(SwitchMmu, stride),
    ];
    assert!(hot.iter().all(|&at| at < 64), "{hot:?}");
    assert!(offset_of!(SwitchMmu, cfg) >= 64);
}
