//! PFC deadlock detection on the wait-for graph of paused (port, class) pairs: each
//! simulation (or partition of a parallel run) hands in its part (`WaitShare`), and one
//! search on the parts together finds a cycle (`Found::search`), the same code for the
//! sequential watch and the parallel driver.

use crate::fabric::NUM_PRIOS;
use crate::ids::{NodeId, PortId};
use crate::units::Time;

/// One hop of a deadlock cycle: a switch port paused for a class, holding packets it
/// cannot send. The next hop of the cycle is a port of the switch that paused this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CycleHop {
    /// The switch owning the port.
    pub node: NodeId,
    /// The port (global id).
    pub port: PortId,
    /// The port's interface number on its node (1-based, as in PFC files).
    pub ifindex: u16,
    /// The paused priority class.
    pub priority: u8,
}

/// A PFC deadlock found in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The cycle, each hop waiting on the next and the last on the first.
    pub cycle: Vec<CycleHop>,
    /// When the cycle formed: the latest of its pauses began.
    pub formed: Time,
    /// When it was found.
    pub detected: Time,
}

/// The key of (port, class) in the wait-for graph.
pub(super) fn key(port: usize, q: usize) -> u32 {
    (port * NUM_PRIOS + q) as u32
}

/// One simulation's (or partition's) part of the wait-for graph (`Simulation::wait_share`).
#[derive(Clone, Debug, Default)]
pub(crate) struct WaitShare {
    /// (port, class) pairs paused long enough and holding packets, with when they paused.
    pub stuck: Vec<(u32, Time)>,
    /// (upstream (port, class), (port, class)): the queue of the second holds packets that
    /// came from the first.
    pub waits: Vec<(u32, u32)>,
}

/// Deadlocks found so far: the first, how many, and the pairs already counted.
#[derive(Clone, Debug, Default)]
pub(crate) struct Found {
    pub first: Option<Deadlock>,
    pub count: u64,
    /// Sorted keys of the (port, class) pairs of every deadlock counted.
    reported: Vec<u32>,
}

impl Found {
    /// Looks for a new cycle in the graph the shares make and records it; `Some` if found.
    /// A queue whose own pair is not stuck (or already counted) drains, so its upstreams
    /// get no edge; a pair stuck behind a drained queue is not in a cycle.
    pub(crate) fn search(&mut self, topo: &crate::topology::Topology, shares: &[WaitShare], t: Time) -> Option<()> {
        let mut stuck: Vec<(u32, Time)> = shares
            .iter()
            .flat_map(|s| s.stuck.iter().copied())
            .filter(|(k, _)| self.reported.binary_search(k).is_err())
            .collect();
        stuck.sort_unstable();
        let is_stuck = |k: u32| stuck.binary_search_by_key(&k, |x| x.0).is_ok();
        let (mut edges, mut draining) = (Vec::new(), Vec::new());
        for &(upstream, at) in shares.iter().flat_map(|s| s.waits.iter()) {
            if is_stuck(at) {
                edges.push((upstream, at));
            } else {
                draining.push(upstream);
            }
        }
        draining.sort_unstable();
        edges.retain(|&(from, _)| is_stuck(from) && draining.binary_search(&from).is_err());
        edges.sort_unstable();
        edges.dedup();
        let cycle = find_cycle(&edges)?;
        let paused_at = |k: u32| stuck[stuck.binary_search_by_key(&k, |x| x.0).expect("stuck")].1;
        let formed = cycle.iter().map(|&k| paused_at(k)).max().unwrap_or(t);
        let hops = cycle
            .iter()
            .map(|&k| {
                let port = PortId(k / NUM_PRIOS as u32);
                let p = &topo.ports[port.idx()];
                CycleHop { node: p.node, port, ifindex: p.ifindex, priority: (k as usize % NUM_PRIOS) as u8 }
            })
            .collect();
        self.reported.extend_from_slice(&cycle);
        self.reported.sort_unstable();
        self.count += 1;
        self.first.get_or_insert(Deadlock { cycle: hops, formed, detected: t });
        Some(())
    }
}

/// A cycle of the directed graph given by its sorted edge list, as the vertices in order,
/// starting from the smallest vertex on it that the search reaches first. Iterative DFS.
fn find_cycle(edges: &[(u32, u32)]) -> Option<Vec<u32>> {
    let out = |v: u32| {
        let lo = edges.partition_point(|&(a, _)| a < v);
        let hi = edges.partition_point(|&(a, _)| a <= v);
        &edges[lo..hi]
    };
    let mut state: std::collections::HashMap<u32, u8> = std::collections::HashMap::new(); // 1 open, 2 done
    let mut starts: Vec<u32> = edges.iter().map(|e| e.0).collect();
    starts.dedup();
    for &s in &starts {
        if state.contains_key(&s) {
            continue;
        }
        // Stack of (vertex, next edge index); the path is the stack's vertices.
        let mut stack: Vec<(u32, usize)> = vec![(s, 0)];
        state.insert(s, 1);
        while let Some(&(v, i)) = stack.last() {
            let succ = out(v);
            if i == succ.len() {
                state.insert(v, 2);
                stack.pop();
                continue;
            }
            let w = succ[i].1;
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            match state.get(&w) {
                None => {
                    state.insert(w, 1);
                    stack.push((w, 0));
                }
                Some(1) => {
                    let at = stack.iter().position(|&(u, _)| u == w).expect("open vertex is on the path");
                    return Some(stack[at..].iter().map(|&(u, _)| u).collect());
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::find_cycle;

    #[test]
    fn finds_a_cycle_and_only_a_cycle() {
        assert_eq!(find_cycle(&[(1, 2), (2, 3)]), None);
        let mut e = vec![(1, 2), (2, 3), (3, 4), (4, 2), (5, 1)];
        e.sort_unstable();
        assert_eq!(find_cycle(&e), Some(vec![2, 3, 4]));
        // A diamond is not a cycle.
        assert_eq!(find_cycle(&[(1, 2), (1, 3), (2, 4), (3, 4)]), None);
        assert_eq!(find_cycle(&[(7, 7)]), Some(vec![7]));
    }
}
