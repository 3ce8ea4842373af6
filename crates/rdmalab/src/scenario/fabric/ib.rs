//! `fabric.link_layer = "infiniband"`: IB's packet format, MTU and VL buffers, and the
//! RoCE-only keys it refuses (PFC, the shared buffer, ECN).

use std::path::Path;

use super::FabricSpec;
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::fabric::ib::{self, LinkLayer};

/// Applies the link layer the fabric names to `c` (after every other fabric key).
pub(super) fn apply(spec: &FabricSpec, file: &Path, c: &mut SimConfig) -> Result<()> {
    let layer = spec.link_layer.unwrap_or_default();
    c.link_layer = layer;
    if layer == LinkLayer::Roce {
        if spec.ib_vl_buffer.is_some() {
            let m = "needs `fabric.link_layer = \"infiniband\"` (RoCE has a shared buffer: `buffer_mb`)";
            return Err(Error::input(file, 0, "fabric.ib_vl_buffer", m));
        }
        if c.cc.fecn().is_some() {
            // Annex A10 is InfiniBand's: FECN/BECN bits live in IB's BTH, and its switches
            // mark them; RoCE's counterpart is ECN with DCQCN.
            let (field, m) = match c.cc {
                crate::cc::CcConfig::Blitz(_) => (
                    "fabric.cc_params.dasr_fallback",
                    "`dasr_fallback = \"ib\"` needs `fabric.link_layer = \"infiniband\"` (on RoCE use \"dcqcn\")",
                ),
                _ => (
                    "fabric.cc",
                    "`cc = \"ib\"` needs `fabric.link_layer = \"infiniband\"` (on RoCE use dcqcn or hpcc)",
                ),
            };
            return Err(Error::input(file, 0, field, m));
        }
        return Ok(());
    }
    refuse_roce_keys(spec, file)?;
    c.mtu = match spec.mtu {
        None => ib::DEFAULT_MTU,
        Some(m) if ib::MTUS.contains(&m) => m,
        Some(m) => {
            let m = format!("{m} is not an InfiniBand MTU (allowed: 256, 512, 1024, 2048, 4096)");
            return Err(Error::input(file, 0, "fabric.mtu", m));
        }
    };
    c.header_bytes = ib::DATA_HEADER;
    c.ack_bytes = ib::ACK_BYTES;
    c.pfc_bytes = ib::FC_PACKET;
    c.ecn = None;
    let largest = c.data_wire(c.mtu) + ib::RETH;
    let buffer = spec.ib_vl_buffer.unwrap_or(ib::DEFAULT_VL_BUFFER);
    if buffer < largest as u64 {
        let m = format!(
            "{buffer} bytes is less than one MTU-sized packet ({largest} bytes: MTU {} + headers): no packet \
             could ever be sent",
            c.mtu
        );
        return Err(Error::input(file, 0, "fabric.ib_vl_buffer", m));
    }
    c.ib_vl_buffer = buffer;
    Ok(())
}

/// Keys of RoCE's lossless Ethernet that have no meaning on InfiniBand.
fn refuse_roce_keys(spec: &FabricSpec, file: &Path) -> Result<()> {
    let why = |what: &str| format!("{what}; InfiniBand has credit-based flow control per VL (`ib_vl_buffer`)");
    if spec.lossless == Some(false) {
        return Err(Error::input(file, 0, "fabric.lossless", why("an InfiniBand fabric is lossless")));
    }
    if spec.ack_high_prio == Some(false) {
        let m = "InfiniBand's ACKs and flow-control packets go ahead of data, outside credits";
        return Err(Error::input(file, 0, "fabric.ack_high_prio", m));
    }
    if spec.buffer_mb.is_some() {
        return Err(Error::input(file, 0, "fabric.buffer_mb", why("a shared buffer is RoCE's")));
    }
    if spec.deadlock_timeout.is_some() {
        return Err(Error::input(file, 0, "fabric.deadlock_timeout", why("PFC deadlock detection is RoCE's")));
    }
    if spec.on_deadlock.is_some() {
        return Err(Error::input(file, 0, "fabric.on_deadlock", why("PFC deadlock detection is RoCE's")));
    }
    if let Some(i) = spec.classes.iter().position(|c| c.pfc.is_some()) {
        return Err(Error::input(file, 0, format!("fabric.classes[{i}].pfc"), why("PFC is RoCE's")));
    }
    // Both tables act on PFC frames, which an InfiniBand link never carries.
    if spec.pfc_watchdog.is_some() {
        return Err(Error::input(file, 0, "fabric.pfc_watchdog", why("the watchdog watches PFC, which is RoCE's")));
    }
    if spec.pfc_pause.is_some() {
        return Err(Error::input(file, 0, "fabric.pfc_pause", why("a PAUSE's pause time is PFC's, which is RoCE's")));
    }
    let ecn_keys = [
        ("ecn", spec.ecn == Some(true)),
        ("ecn_kmin", spec.ecn_kmin.is_some()),
        ("ecn_kmax", spec.ecn_kmax.is_some()),
        ("ecn_pmax", spec.ecn_pmax.is_some()),
    ];
    if let Some((key, _)) = ecn_keys.iter().find(|(_, set)| *set) {
        let m = "ECN marking is RoCE's (InfiniBand switches mark FECN under its congestion control)";
        return Err(Error::input(file, 0, format!("fabric.{key}"), m));
    }
    Ok(())
}
