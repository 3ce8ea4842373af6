use super::*;

fn hosts(n: u32) -> Vec<NodeId> {
    (0..n).map(|i| NodeId(i + 100)).collect()
}

#[test]
fn sorts_by_start_and_maps_hosts() {
    let t = "# c\nNodes 3\nConnections 3\n\n0->1 id 1 start 50 size 10\n2->0 start 5 size 7 prio 3 addon\n1->2 id 3 start 5 size 1\n";
    let f = parse_cm(t, Path::new("m.cm"), &hosts(3)).unwrap();
    assert_eq!(f.iter().map(|f| (f.src.0, f.start.0)).collect::<Vec<_>>(), vec![(102, 5), (101, 5), (100, 50)]);
    assert_eq!((f[2].pg, f[2].dport, f[2].sport), (3, 100, None));
}

#[test]
fn errors_name_line_and_field() {
    let cases = [
        ("Nodes 3\nConnections 1\n0->5 start 1 size 1\n", "m.cm:3: field `dst`", "out of range"),
        ("Nodes 3\nConnections 1\n0->1 start 1 size x\n", "m.cm:3: field `size`", "not a non-negative"),
        ("Nodes 3\nConnections 1\n0->1 start 1 size 9007199254740993\n", "m.cm:3: field `size`", "2^53"),
        ("Nodes 3\nConnections 2\n0->1 start 1 size 1\n", "m.cm:2: field `Connections`", "says 2"),
        ("Nodes 3\nConnections 1\n0->1 size 1\n", "m.cm:3: field `start`", "no `start`"),
        ("Nodes 3\nConnections 1\n0->1 start 1 size 1 colour red\n", "m.cm:3: field `colour`", "unknown"),
        ("Nodes 3\nConnections 1\n0->1 start 1.5 size 1\n", "m.cm:3: field `start`", "whole number"),
    ];
    for (text, loc, msg) in cases {
        let e = parse_cm(text, Path::new("m.cm"), &hosts(3)).unwrap_err().to_string();
        assert!(e.contains(loc) && e.contains(msg), "{text:?}: {e}");
    }
    let e = parse_cm("Nodes 9\nConnections 1\n7->1 start 1 size 1\n", Path::new("m.cm"), &hosts(3)).unwrap_err();
    assert!(e.to_string().contains("m.cm:3: field `src`"), "{e}");
    let e = parse_cm("Nodes 3\nConnections 1\n0->1 trigger 1 size 1\n", Path::new("m.cm"), &hosts(3)).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
}

fn traffic(body: &str) -> Result<CmTraffic> {
    let conns = body.lines().filter(|l| l.contains("->")).count();
    let trigs = body.lines().filter(|l| l.starts_with("trigger")).count();
    parse_cm_traffic(&format!("Nodes 4\nConnections {conns}\nTriggers {trigs}\n{body}"), Path::new("t.cm"), &hosts(4))
}

#[test]
fn triggers_become_dependencies_at_the_right_hosts() {
    use crate::app::deps::Trigger::*;
    let t = traffic(
        "0->1 id 1 start 7 size 10 recv_done_trigger 1\n\
         2->3 id 2 start 9 size 10\n\
         1->2 id 3 trigger 1 size 20 send_done_trigger 2\n\
         0->2 id 4 start 0 size 30 send_done_trigger 2\n\
         2->0 id 5 trigger 2 size 40\n\
         trigger id 1 oneshot\n\
         trigger id 2 barrier count 2\n",
    )
    .unwrap();
    // Line 5 (2->3) names no trigger: a plain flow.
    assert_eq!(t.flows.len(), 1);
    assert_eq!((t.flows[0].src.0, t.flows[0].start), (102, Time(9)));
    let g = t.job.unwrap();
    assert_eq!(t.job_lines, [4, 6, 7, 8]);
    let ts = g.transfers();
    assert_eq!(
        ts.iter().map(|t| (t.src.0, t.dst.0, t.bytes)).collect::<Vec<_>>(),
        [(100, 101, 10), (101, 102, 20), (100, 102, 30), (102, 100, 40)]
    );
    // A start is the compute delay of a transfer without dependencies.
    assert_eq!((ts[0].delay, ts[0].deps.len(), ts[2].delay), (Time(7), 0, Time::ZERO));
    assert_eq!(ts[1].deps, [Dep { on: 0, when: Received }]);
    // The barrier waits on both sources: sent at host 1 (remote to 2), sent at host 0 (remote).
    assert_eq!(ts[3].deps, [Dep { on: 1, when: Sent }, Dep { on: 2, when: Sent }]);
    assert_eq!(g.event_host(ts[1].deps[0]), NodeId(101));
    assert_eq!(g.event_host(ts[3].deps[0]), NodeId(101));
    // Two connections of one pair get their own QPs (lanes), as htsim's flows are.
    let t = traffic("0->1 start 0 size 1 send_done_trigger 1\n0->1 trigger 1 size 1\ntrigger id 1 oneshot\n").unwrap();
    assert_eq!(t.job.unwrap().transfers().iter().map(|t| t.lane).collect::<Vec<_>>(), [0, 1]);
}

#[test]
fn bad_triggers_name_line_and_field() {
    let cases = [
        ("0->1 start 0 size 1 send_done_trigger 9\n", "t.cm:4: field `send_done_trigger`", "not declared"),
        ("0->1 trigger 0 size 1\n", "t.cm:4: field `trigger`", "id 0"),
        ("0->1 start 0 trigger 1 size 1\ntrigger id 1 oneshot\n", "t.cm:4: field `start`", "not both"),
        (
            "0->1 start 0 size 1 send_done_trigger 1\n1->2 start 0 size 1 recv_done_trigger 1\n2->3 trigger 1 size 1\ntrigger id 1 oneshot\n",
            "t.cm:7: field `id`",
            "fired by 2 connections (lines 4, 5)",
        ),
        (
            "0->1 start 0 size 1 send_done_trigger 1\n2->3 trigger 1 size 1\ntrigger id 1 barrier count 2\n",
            "t.cm:6: field `count`",
            "never fire",
        ),
        ("2->3 trigger 1 size 1\ntrigger id 1 oneshot\n", "t.cm:5: field `id`", "lines 4 would never start"),
        ("0->1 start 0 size 1\ntrigger id 1 barrier\n", "t.cm:5: field `count`", "at least 1"),
        ("0->1 start 0 size 1\ntrigger id 1\n", "t.cm:5: field `type`", "no kind"),
        ("0->1 start 0 size 1\ntrigger id 1 oneshot\ntrigger id 1 oneshot\n", "t.cm:6: field `id`", "declared twice"),
        (
            "0->1 trigger 1 size 1 send_done_trigger 2\n1->2 trigger 2 size 1 recv_done_trigger 1\n\
             trigger id 1 oneshot\ntrigger id 2 oneshot\n",
            "t.cm:4: field `trigger`",
            "a cycle of triggers: line 4 (on trigger 1) waits on line 5 (on trigger 2) waits on line 4",
        ),
    ];
    for (body, loc, msg) in cases {
        let e = traffic(body).unwrap_err().to_string();
        assert!(e.contains(loc) && e.contains(msg), "{body:?}: {e}");
    }
    let e = parse_cm_traffic(
        "Nodes 2\nConnections 1\nTriggers 2\n0->1 start 0 size 1\ntrigger id 1 oneshot\n",
        Path::new("t.cm"),
        &hosts(2),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("t.cm:3: field `Triggers`") && e.contains("says 2 triggers"), "{e}");
    let e = traffic("0->1 start 0 size 1 send_done_trigger 1\n1->2 trigger 1 size 1\n1->3 trigger 1 size 1\ntrigger id 1 multishot\n")
        .unwrap_err();
    assert!(matches!(&e, Error::Unsupported(m) if m.starts_with("t.cm:7: field `multishot`")), "{e}");
    // A multishot with one source and one target is a oneshot.
    let t =
        traffic("0->1 start 0 size 1 send_done_trigger 1\n1->2 trigger 1 size 1\ntrigger id 1 multishot\n").unwrap();
    assert_eq!(t.job.unwrap().transfers()[1].deps.len(), 1);
}
