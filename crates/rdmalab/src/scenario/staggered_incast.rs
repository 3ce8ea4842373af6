//! `incast_rounds`' `stagger`: the host applications that carry the Blitz poster's application-layer
//! DASR (`workload::serial_incast` for `serial`, a paced `attacks::Staggered` per message
//! for `paced`), and the flows bound to them.

use serde::Deserialize;

use crate::ids::{AppId, NodeId};
use crate::workload::attacks::{HostApp, StaggerPolicy, Staggered};
use crate::workload::generators::Rounds;
use crate::workload::serial_incast::{GrantAggregator, GrantSender};
use crate::workload::FlowSpec;

/// How the senders of `incast_rounds` stagger their messages (Blitz §3: DASR emulated
/// "by staggering the messages in time at the application layer").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stagger {
    /// Each sender posts its whole message at its (jittered) start.
    #[default]
    None,
    /// The aggregator grants one sender at a time (`workload::serial_incast`).
    Serial,
    /// Each sender posts its message in pieces held to 1/n of the aggregator's link.
    Paced,
}

/// The flows of an incast's rounds, bound to the applications that stagger them (pushed
/// onto `apps`, whose index is their application id); unchanged for `Stagger::None`.
pub(super) fn apply(
    stagger: Stagger,
    piece: u64,
    senders: &[NodeId],
    shape: Rounds,
    pg: u8,
    flows: Vec<FlowSpec>,
    apps: &mut Vec<HostApp>,
) -> Vec<FlowSpec> {
    match stagger {
        Stagger::None => flows,
        Stagger::Paced => paced(piece, senders.len() as u32, flows, apps),
        Stagger::Serial => serial(senders, shape, pg, flows, apps),
    }
}

/// One paced transfer per message: pieces of `piece` bytes on one reused QP, each `n`
/// pieces' time on the aggregator's link after the one before (`n`: the round's members).
fn paced(piece: u64, members: u32, flows: Vec<FlowSpec>, apps: &mut Vec<HostApp>) -> Vec<FlowSpec> {
    flows
        .into_iter()
        .map(|f| {
            let app = AppId::new(apps.len());
            apps.push(HostApp::Staggered(Staggered {
                src: f.src,
                dst: f.dst,
                qps: 1,
                size: f.size,
                chunk: Some(piece.min(f.size)),
                interval: None,
                policy: StaggerPolicy::Reuse,
                start: f.start,
                tenant: f.tenant,
                paced: Some(members),
            }));
            FlowSpec { app, ..f }
        })
        .collect()
}

/// The aggregator's application, then one per sender; every flow bound to its sender's.
fn serial(senders: &[NodeId], shape: Rounds, pg: u8, flows: Vec<FlowSpec>, apps: &mut Vec<HostApp>) -> Vec<FlowSpec> {
    let Some(first) = flows.first() else { return flows };
    let (aggregator, tenant) = (first.dst, first.tenant);
    let aggregator_app = AppId::new(apps.len());
    let sender_app = |i: usize| AppId::new(aggregator_app.idx() + 1 + i);
    apps.push(HostApp::GrantAggregator(GrantAggregator {
        host: aggregator,
        senders: senders.iter().enumerate().map(|(i, &s)| (s, sender_app(i))).collect(),
        start: shape.start,
        period: shape.period,
        rounds: shape.rounds,
        pg,
        tenant,
    }));
    for &host in senders {
        apps.push(HostApp::GrantSender(GrantSender { host, aggregator, aggregator_app, messages: shape.rounds }));
    }
    flows
        .into_iter()
        .map(|f| {
            let i = senders.iter().position(|&s| s == f.src).expect("a round's flow comes from a member");
            FlowSpec { app: sender_app(i), ..f }
        })
        .collect()
}
