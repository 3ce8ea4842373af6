//! Dependency-driven transfers: a job is a list of transfers (one message each, from one
//! host to another on one of the pair's QPs), each of which starts once every transfer it
//! depends on has completed at its sender, plus an optional compute delay.
//!
//! A dependency is one of two events, as htsim's connection-matrix triggers are
//! (`send_done_trigger`, `recv_done_trigger`):
//!
//! - [`Trigger::Sent`]: a transfer of the same host completed as a send (its last byte
//!   acknowledged: the RC work completion);
//! - [`Trigger::Received`]: a transfer *to* this host was placed, its last byte in order
//!   (the receive completion);
//! - [`Trigger::Posted`]: a transfer of the same host was posted (its WR handed to the
//!   RNIC). htsim has no such trigger; it stands for a rank having joined a collective, so
//!   that the rank's later steps cannot go before its first (`formats::simai::iteration`).
//!
//! Both are events at the host that starts the dependent transfer: a host never waits on
//! what happens elsewhere except through what reaches it in packets. [`TransferGraph::new`]
//! refuses a dependency that breaks this locality, and refuses a cycle with its members
//! named, so a job that is accepted cannot wait on itself.
//!
//! The hosts' side of a job is [`crate::app::rank::RankApp`].

use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;

/// Which event of the transfer depended on releases the dependent one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// Its send completion at its sender (the dependent has the same sender).
    Sent,
    /// Its receive completion at its receiver (the dependent is sent by that receiver).
    Received,
    /// Its post at its sender (the dependent has the same sender): always a local event.
    Posted,
}

/// One dependency: transfer `on` (an index into the job) and the event of it that counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dep {
    /// The transfer depended on.
    pub on: u32,
    /// Which of its completions releases the dependent.
    pub when: Trigger,
}

/// One message of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The sending host.
    pub src: NodeId,
    /// The receiving host.
    pub dst: NodeId,
    /// Bytes of the message.
    pub bytes: u64,
    /// Which QP of the (src, dst) pair carries it: transfers of one lane share a QP, in the
    /// order their sender posts them (NCCL's channels are lanes).
    pub lane: u16,
    /// Compute time between the last dependency completing and the post.
    pub delay: Time,
    /// What must complete first (none: it starts when the job starts).
    pub deps: Vec<Dep>,
}

/// A validated job: local dependencies only, no cycle. Also holds each transfer's depth (the
/// longest chain of dependencies before it), which the records use as its step.
#[derive(Clone, Debug)]
pub struct TransferGraph {
    transfers: Vec<Transfer>,
    depth: Vec<u32>,
}

impl TransferGraph {
    /// Checks `transfers`: every dependency names an existing transfer and an event at the
    /// dependent's sender; no transfer is empty or sent to its own host; no cycle. Errors
    /// name the field (`transfers[i].deps`, ...) and, for a cycle, its transfers in order.
    pub fn new(transfers: Vec<Transfer>) -> Result<TransferGraph> {
        TransferGraph::build(transfers, false)
    }

    /// As [`TransferGraph::new`], but a dependency may name an event at another host than
    /// the dependent's sender (a *remote* dependency, as htsim's triggers allow): that event
    /// reaches the sender as a notice one path's propagation delay after it happened
    /// (`sim/apps/collective.rs`), as the zero-byte control message it stands for would at
    /// the earliest. Used by the htsim connection-matrix reader (`formats::htsim_cm`).
    pub fn with_remote(transfers: Vec<Transfer>) -> Result<TransferGraph> {
        TransferGraph::build(transfers, true)
    }

    /// The host at which dependency `d` happens: the sender of `d.on` for `Sent`, its
    /// receiver for `Received`.
    pub fn event_host(&self, d: Dep) -> NodeId {
        let on = &self.transfers[d.on as usize];
        match d.when {
            Trigger::Sent | Trigger::Posted => on.src,
            Trigger::Received => on.dst,
        }
    }

    fn build(transfers: Vec<Transfer>, remote: bool) -> Result<TransferGraph> {
        let n = transfers.len();
        for (i, t) in transfers.iter().enumerate() {
            if t.bytes == 0 {
                return Err(Error::scenario(format!("transfers[{i}].bytes"), "must be at least 1 byte"));
            }
            if t.src == t.dst {
                return Err(Error::scenario(format!("transfers[{i}].dst"), format!("sends to its own host {}", t.src)));
            }
            for d in &t.deps {
                let field = format!("transfers[{i}].deps");
                let Some(on) = transfers.get(d.on as usize) else {
                    return Err(Error::scenario(&field, format!("no transfer {} (the job has {n})", d.on)));
                };
                let (host, side) = match d.when {
                    Trigger::Sent => (on.src, "sent by"),
                    Trigger::Posted => (on.src, "posted by"),
                    Trigger::Received => (on.dst, "received at"),
                };
                // A post is never announced to another host: no notice stands for it.
                if host != t.src && (!remote || d.when == Trigger::Posted) {
                    return Err(Error::scenario(
                        &field,
                        format!(
                            "transfer {} is {side} host {host}, not this transfer's sender {}: a host waits only on \
                             its own completions",
                            d.on, t.src
                        ),
                    ));
                }
            }
        }
        let depth = depths(&transfers)?;
        Ok(TransferGraph { transfers, depth })
    }

    /// The transfers, in the order given.
    pub fn transfers(&self) -> &[Transfer] {
        &self.transfers
    }

    /// Transfer `i`'s depth: 0 without dependencies, else one more than its deepest one.
    pub fn depth(&self, i: usize) -> u32 {
        self.depth[i]
    }

    /// Every host that sends or receives, in increasing order.
    pub fn hosts(&self) -> Vec<NodeId> {
        let mut h: Vec<NodeId> = self.transfers.iter().flat_map(|t| [t.src, t.dst]).collect();
        h.sort_unstable();
        h.dedup();
        h
    }
}

/// Each transfer's depth by an iterative depth-first walk (no recursion: a job of a million
/// transfers in a chain must not overflow the stack); a cycle is an error naming it.
fn depths(transfers: &[Transfer]) -> Result<Vec<u32>> {
    const NEW: u32 = u32::MAX;
    const OPEN: u32 = u32::MAX - 1;
    let mut depth = vec![NEW; transfers.len()];
    let mut stack: Vec<(usize, usize)> = Vec::new(); // (transfer, next dependency to look at)
    for root in 0..transfers.len() {
        if depth[root] != NEW {
            continue;
        }
        depth[root] = OPEN;
        stack.push((root, 0));
        while let Some(&mut (t, ref mut next)) = stack.last_mut() {
            if let Some(d) = transfers[t].deps.get(*next) {
                *next += 1;
                let on = d.on as usize;
                match depth[on] {
                    NEW => {
                        depth[on] = OPEN;
                        stack.push((on, 0));
                    }
                    OPEN => return Err(cycle_error(&stack, on)),
                    _ => {}
                }
                continue;
            }
            depth[t] = transfers[t].deps.iter().map(|d| depth[d.on as usize] + 1).max().unwrap_or(0);
            stack.pop();
        }
    }
    Ok(depth)
}

/// The cycle that closes at `on`, which is open on `stack`: its members from `on` on.
fn cycle_error(stack: &[(usize, usize)], on: usize) -> Error {
    let from = stack.iter().position(|&(t, _)| t == on).unwrap_or(0);
    let mut names: Vec<String> = stack[from..].iter().map(|&(t, _)| t.to_string()).collect();
    names.push(on.to_string());
    Error::scenario(
        "deps",
        format!("a cycle of dependencies: transfer {} (each waits on the next)", names.join(" -> ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(src: u32, dst: u32, deps: &[(u32, Trigger)]) -> Transfer {
        Transfer {
            src: NodeId(src),
            dst: NodeId(dst),
            bytes: 1000,
            lane: 0,
            delay: Time::ZERO,
            deps: deps.iter().map(|&(on, when)| Dep { on, when }).collect(),
        }
    }

    #[test]
    fn a_chain_has_depths_in_order() {
        use Trigger::*;
        // 0 -> 1 -> 2 relay: each forwards what it received; 3 follows 0's own send.
        let g = TransferGraph::new(vec![
            t(0, 1, &[]),
            t(1, 2, &[(0, Received)]),
            t(2, 0, &[(1, Received)]),
            t(0, 2, &[(0, Sent)]),
        ])
        .unwrap();
        let d: Vec<u32> = (0..4).map(|i| g.depth(i)).collect();
        assert_eq!(d, [0, 1, 2, 1]);
        assert_eq!(g.hosts(), [NodeId(0), NodeId(1), NodeId(2)]);
    }

    #[test]
    fn a_cycle_is_refused_with_its_members() {
        use Trigger::*;
        let e =
            TransferGraph::new(vec![t(0, 1, &[(2, Received)]), t(1, 2, &[(0, Received)]), t(2, 0, &[(1, Received)])])
                .unwrap_err()
                .to_string();
        assert!(e.contains("cycle") && e.contains("0 -> 2 -> 1 -> 0"), "{e}");
    }

    #[test]
    fn a_dependency_on_another_host_is_refused() {
        use Trigger::*;
        // Transfer 1 is sent by host 1 and waits on transfer 0's send at host 0.
        let e = TransferGraph::new(vec![t(0, 1, &[]), t(1, 2, &[(0, Sent)])]).unwrap_err().to_string();
        assert!(e.contains("transfers[1].deps") && e.contains("its own completions"), "{e}");
        let e = TransferGraph::new(vec![t(0, 1, &[]), t(2, 0, &[(0, Received)])]).unwrap_err().to_string();
        assert!(e.contains("received at host 1"), "{e}");
        let e = TransferGraph::new(vec![t(0, 1, &[(5, Sent)])]).unwrap_err().to_string();
        assert!(e.contains("no transfer 5"), "{e}");
    }

    #[test]
    fn a_post_is_a_local_event_even_where_remote_dependencies_are_allowed() {
        use Trigger::*;
        let g = TransferGraph::new(vec![t(0, 1, &[]), t(0, 2, &[(0, Posted)])]).unwrap();
        assert_eq!(g.depth(1), 1);
        let e = TransferGraph::with_remote(vec![t(0, 1, &[]), t(1, 2, &[(0, Posted)])]).unwrap_err().to_string();
        assert!(e.contains("posted by host 0"), "{e}");
    }
}
