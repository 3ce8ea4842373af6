//! The event queue's tests: order against a stable sort, ties, reserved keys, origin
//! order, `retain`, and crowded buckets.
use super::*;
use rand::{Rng, SeedableRng};

#[test]
fn earliest_first_and_fifo_ties() {
    let mut q = EventQueue::new();
    q.push(Time(5), 'a');
    q.push(Time(3), 'b');
    q.push(Time(5), 'c');
    q.push(Time(3), 'd');
    q.push(Time(4), 'e');
    let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
    assert_eq!(order, vec!['b', 'd', 'e', 'a', 'c']);
}

/// Interleaves pushes (at or after the last popped time, as a simulation does) and
/// pops at random; every pop must return the smallest (time, insertion index) pending.
/// With `rebucket`, the queue also changes its bucket width and ring now and then, to
/// any of them, whatever it holds at that moment.
fn against_a_stable_sort(shift: u32, slots: usize, groups: usize, spread: u64, seed: u64, rebucket: bool) {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut q = EventQueue::with_levels(shift, slots, groups);
    let mut pending: Vec<(u64, usize)> = Vec::new();
    let (mut next, mut now) = (0usize, 0u64);
    for _ in 0..20_000 {
        // Now and then, and often while a bucket is crowded (its entries then sit in `rest`
        // and `late`, which a change must file again too).
        if rebucket && (rng.gen_bool(0.003) || q.crowded() && rng.gen_bool(0.05)) {
            let last_ps = ((q.cur_bucket + 1) << q.shift) - 1;
            q.rebucket(rng.gen_range(0..=20), 64 << rng.gen_range(0..7));
            assert_eq!(q.len(), pending.len());
            assert_eq!(q.cur_bucket, last_ps >> q.shift, "the current bucket moved in time");
        }
        if rng.gen_bool(0.55) || pending.is_empty() {
            // Mostly near events, sometimes far ones, sometimes exactly now.
            let t = match rng.gen_range(0..10) {
                0 => now,
                1 => now + rng.gen_range(0..spread * 1000),
                _ => now + rng.gen_range(0..spread),
            };
            q.push(Time(t), next);
            pending.push((t, next));
            next += 1;
        } else {
            let (i, _) = pending.iter().enumerate().min_by_key(|(_, &k)| k).unwrap();
            let want = pending.remove(i);
            assert_eq!(q.peek_time(), Some(Time(want.0)));
            let (t, e) = q.pop().unwrap();
            assert_eq!((t.0, e), want);
            now = t.0;
        }
        assert_eq!(q.len(), pending.len());
    }
    while let Some((t, e)) = q.pop() {
        let (i, _) = pending.iter().enumerate().min_by_key(|(_, &k)| k).unwrap();
        assert_eq!((t.0, e), pending.remove(i));
    }
    assert!(pending.is_empty());
}

#[test]
fn a_crowded_bucket_takes_inserts_ahead_of_its_tail_in_order() {
    // Many flows starting together fill one bucket; every event they schedule a few ps
    // later lands ahead of thousands of pending ones. The bucket turns crowded, and
    // the pops stay in (time, insertion) order.
    let mut q = EventQueue::with_resolution(20, 64);
    let mut pending: Vec<(u64, usize)> = Vec::new();
    for i in 0..5_000usize {
        let t = (i as u64 * 7919) % 5_000;
        q.push(Time(t), i);
        pending.push((t, i));
    }
    let (mut next, mut saw_crowd) = (5_000usize, false);
    while let Some((t, e)) = q.pop() {
        let (i, _) = pending.iter().enumerate().min_by_key(|(_, &k)| k).unwrap();
        assert_eq!((t.0, e), pending.remove(i));
        if next < 9_000 {
            q.push(Time(t.0 + 3), next);
            pending.push((t.0 + 3, next));
            next += 1;
        }
        saw_crowd |= q.crowded();
        assert_eq!(q.len(), pending.len());
    }
    assert!(saw_crowd, "the bucket never turned crowded");
    assert!(pending.is_empty());
}

#[test]
fn a_crowded_bucket_staged_by_a_peek_still_yields_to_an_earlier_push() {
    let mut q = EventQueue::with_resolution(20, 64);
    for t in 100..300u64 {
        q.push(Time(t), t);
    }
    assert_eq!(q.pop(), Some((Time(100), 100)));
    q.push(Time(150), 1_150); // ahead of 149 pending: the bucket turns crowded
    assert!(q.crowded());
    assert_eq!(q.peek_time(), Some(Time(101))); // stages 101
    q.push(Time(100), 1_100); // due before the staged entry
    assert_eq!(q.pop(), Some((Time(100), 1_100)));
    let rest: Vec<u64> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
    let mut want: Vec<u64> = (101..300).collect();
    want.insert(50, 1_150); // after 150's own entry, which was pushed first
    assert_eq!(rest, want);
    assert!(!q.crowded() && q.is_empty());
}

/// (shift, slots, far groups, spread) of the random interleavings: coarse and fine buckets,
/// small and large rings, ties and far-future events, within the second level's lists, past
/// them (its heap), and both.
const INTERLEAVINGS: [(u32, usize, usize, u64); 8] = [
    (0, 64, 4096, 50),
    (3, 64, 4096, 5_000),
    (10, 4096, 4096, 100_000),
    (10, 64, 4096, 1_000_000),
    (20, 128, 4096, 10),
    (3, 64, 64, 5_000),
    (0, 128, 64, 400),
    (6, 256, 128, 50_000),
];

#[test]
fn matches_a_stable_sort_under_random_interleaving() {
    for (seed, (shift, slots, groups, spread)) in INTERLEAVINGS.into_iter().enumerate() {
        against_a_stable_sort(shift, slots, groups, spread, seed as u64, false);
    }
}

#[test]
fn a_change_of_bucket_width_keeps_the_order() {
    // The same interleavings with other seeds, the width and the ring changed at random
    // moments (in a crowded bucket, with entries in the second level and its heap).
    for (seed, (shift, slots, groups, spread)) in INTERLEAVINGS.into_iter().enumerate() {
        against_a_stable_sort(shift, slots, groups, spread, 100 + seed as u64, true);
    }
}

#[test]
fn a_change_of_width_in_a_crowded_bucket_files_its_late_entries_again() {
    // One bucket of 2,000 entries turns crowded under inserts ahead of its tail; the width
    // then changes while both its moved-aside entries and the inserts wait.
    let mut q = EventQueue::with_resolution(20, 64);
    let mut want: Vec<(u64, u64)> = (0..2_000u64).map(|i| ((i * 7919) % 2_000, i)).collect();
    for &(t, i) in &want {
        q.push(Time(t), i);
    }
    want.sort();
    let mut got = Vec::new();
    for k in 0..100u64 {
        let (t, e) = q.pop().unwrap();
        got.push((t.0, e));
        q.push(Time(t.0 + 3), 10_000 + k);
        want.push((t.0 + 3, 10_000 + k));
    }
    assert!(q.crowded() && !q.late.is_empty(), "the bucket did not turn crowded");
    q.rebucket(6, 256);
    got.extend(std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))));
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn a_widening_keeps_the_entries_it_files_into_the_current_bucket() {
    // Buckets of 2^8 ps under a first width of 2^10; the one of 1,024..1,280 ps is used up
    // when a review widens them: the current bucket becomes 1,024..1,536 ps, and the entries
    // due at 1,350 and 1,400 ps are filed into it. They come next, before 3,000.
    let mut q = EventQueue::with_resolution(10, 1024);
    q.rebucket(8, 4096);
    for t in [1100u64, 1350, 1400, 3000] {
        q.push(Time(t), t);
    }
    assert_eq!(q.pop(), Some((Time(1100), 1100)));
    q.width.make_due_empty();
    let rest: Vec<u64> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
    assert_eq!(rest, vec![1350, 1400, 3000]);
    assert_eq!(q.shift, 9, "the review widened the buckets");
}

#[test]
fn buckets_narrow_where_they_fill_and_widen_back_where_they_empty() {
    // 40 events in every 1,024-ps bucket, then one event every 600 ps: the width halves
    // under the first while a bucket holds more than 12 on average (40, then 20: down to
    // 2^8 ps, where it holds 10) and comes back to its first 2^10 ps under the second (each
    // wider bucket then starts with entries filed again into it); the order never moves.
    let mut q = EventQueue::with_resolution(10, 1024);
    let mut want = Vec::new();
    for i in 0..(20_000 * 40u64) {
        let t = i / 40 * 1024 + (i * 7919) % 1024;
        q.push(Time(t), i);
        want.push((t, i));
    }
    let sparse_from = 20_000 * 1024;
    for j in 0..40_000u64 {
        let (t, i) = (sparse_from + j * 600, 20_000 * 40 + j);
        q.push(Time(t), i);
        want.push((t, i));
    }
    want.sort();
    let mut narrowest = q.shift;
    for (k, w) in want.iter().enumerate() {
        assert_eq!(q.pop(), Some((Time(w.0), w.1)), "pop {k}");
        narrowest = narrowest.min(q.shift);
    }
    assert_eq!(narrowest, 8, "the dense part left the width at 2^{narrowest} ps");
    assert_eq!(q.shift, 10, "the sparse part did not widen the buckets back");
    assert!(q.is_empty());
}

#[test]
fn a_reserved_sequence_number_keeps_its_place_among_ties() {
    let mut q = EventQueue::new();
    q.push(Time(10), 'a');
    let seq = q.reserve_seq();
    q.push(Time(10), 'c');
    q.push(Time(7), 'x');
    q.push_reserved(Time(10), seq, 'b');
    let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
    assert_eq!(order, vec!['x', 'a', 'b', 'c']);
}

#[test]
fn origin_order_breaks_ties_by_origin_then_its_own_counter() {
    let mut q = EventQueue::new();
    q.use_origin_order(3);
    q.set_origin(2);
    q.push(Time(5), 'a');
    q.set_origin(1);
    q.push(Time(5), 'b');
    q.push(Time(4), 'c');
    q.set_origin(2);
    q.push(Time(5), 'd');
    q.set_origin(1);
    q.push(Time(5), 'e');
    q.push_reserved(Time(5), origin_key(0, 99), 'f');
    let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
    assert_eq!(order, vec!['c', 'f', 'b', 'e', 'a', 'd']);
}

#[test]
fn retain_keeps_the_order_of_what_it_keeps() {
    let mut q = EventQueue::with_resolution(2, 64);
    for i in 0..500u64 {
        q.push(Time((i * 37) % 1000), i);
    }
    q.pop();
    let mut expect: Vec<(u64, u64)> = Vec::new();
    let mut copy = EventQueue::with_resolution(2, 64);
    for i in 0..500u64 {
        copy.push(Time((i * 37) % 1000), i);
    }
    copy.pop();
    while let Some((t, e)) = copy.pop() {
        if e % 3 != 0 {
            expect.push((t.0, e));
        }
    }
    q.retain(|e| e % 3 != 0);
    q.push(Time(999), 1000); // a later push still finds its place
    expect.push((999, 1000));
    expect.sort_by_key(|&(t, _)| t); // stable: ties stay in push order
    let got: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
    assert_eq!(got, expect);
}

/// The order of one origin's events among ties does not depend on what other origins
/// push, or in which interleaving: the property the parallel engine stands on.
#[test]
fn origin_order_does_not_depend_on_other_origins_or_interleaving() {
    let pushes: Vec<(u32, u64, u32)> = (0..300u32).map(|i| (i % 4, (i as u64 * 7) % 5, i)).collect();
    let run = |keep: &dyn Fn(u32) -> bool, reverse_origins: bool| {
        let mut q = EventQueue::new();
        q.use_origin_order(4);
        // Each origin's pushes in its own order; origins interleaved differently.
        let mut order: Vec<u32> = (0..4).collect();
        if reverse_origins {
            order.reverse();
        }
        for o in order.into_iter().filter(|&o| keep(o)) {
            q.set_origin(o);
            for &(po, t, id) in pushes.iter().filter(|p| p.0 == o) {
                debug_assert_eq!(po, o);
                q.push(Time(t), id);
            }
        }
        std::iter::from_fn(|| q.pop().map(|(_, e)| e)).filter(|id| id % 4 == 1).collect::<Vec<_>>()
    };
    let all = run(&|_| true, false);
    assert_eq!(all, run(&|_| true, true));
    assert_eq!(all, run(&|o| o == 1, false));
    assert_eq!(all, run(&|o| o != 2, true));
}

#[test]
fn a_push_before_an_advanced_bucket_still_comes_first() {
    // peek_time may advance to a later bucket; a push for an earlier time afterwards
    // (a caller adding work between two run calls) must still pop first.
    let mut q = EventQueue::with_resolution(4, 64);
    q.push(Time(1_000), 'b');
    assert_eq!(q.peek_time(), Some(Time(1_000)));
    q.push(Time(20), 'a');
    q.push(Time(1_000_000), 'c');
    let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
    assert_eq!(order, vec!['a', 'b', 'c']);
}

/// `peek` and `take_peeked` remove what `pop` would: the same events in the same order,
/// with many entries to a bucket and some far beyond the ring.
#[test]
fn take_peeked_takes_what_pop_would() {
    let (mut a, mut b) = (EventQueue::new(), EventQueue::new());
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
    let mut now = 0u64;
    let take = |a: &mut EventQueue<u32>| {
        let (t, seq, ev) = a.peek()?;
        a.take_peeked(seq);
        Some((t, ev))
    };
    for i in 0..30_000u32 {
        let t = now
            + match rng.gen_range(0..10) {
                0 => 0,
                1..=7 => rng.gen_range(0..5_000),
                _ => rng.gen_range(0..50_000_000),
            };
        a.push(Time(t), i);
        b.push(Time(t), i);
        if rng.gen_bool(0.5) {
            let got = take(&mut a);
            assert_eq!(got, b.pop());
            assert_eq!(a.popped_seq(), b.popped_seq());
            now = got.expect("pending").0 .0;
        }
    }
    while let Some(got) = take(&mut a) {
        assert_eq!(Some(got), b.pop());
    }
    assert!(b.pop().is_none());
}
