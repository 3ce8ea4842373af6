//! `fabric.egress_arbitration`, `fabric.buffer_model`, `fabric.port_buffer_kb`,
//! `fabric.dt_alpha` and `fabric.pfc_headroom_kb`: how a switch orders an egress queue and
//! where it counts its buffer; and `fabric.nic_arbitration`, how a NIC orders its QPs' turns.

use std::path::Path;

use super::FabricSpec;
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::fabric::BufferModel;
use crate::topology::Topology;

/// Copies the three settings into `c`, refusing combinations that mean nothing.
pub(super) fn apply(spec: &FabricSpec, file: &Path, c: &mut SimConfig) -> Result<()> {
    if let Some(a) = spec.nic_arbitration {
        c.nic_arbitration = a;
    }
    if let Some(a) = spec.egress_arbitration {
        c.egress_arbitration = a;
    } else if c.infiniband() {
        // An IB switch holds packets in input buffers per port and VL, and each output port
        // arbitrates among the inputs that hold a packet for it: the closest our egress
        // queues come is DRR among input ports (docs/model/infiniband.md, "InfiniBand link layer").
        c.egress_arbitration = crate::fabric::EgressArbitration::InputFair;
    }
    if let Some(m) = spec.buffer_model {
        if c.infiniband() && m.per_egress() {
            let msg = "InfiniBand switches buffer per input port and VL (`ib_vl_buffer`), not per egress port";
            return Err(Error::input(file, 0, "fabric.buffer_model", msg));
        }
        c.buffer_model = m;
    }
    if let Some(kb) = spec.port_buffer_kb {
        if c.buffer_model != BufferModel::PerPort {
            let msg = "sets the buffer of each egress port: it needs `buffer_model = \"per_port\"`";
            return Err(Error::input(file, 0, "fabric.port_buffer_kb", msg));
        }
        if !(kb.is_finite() && kb > 0.0) {
            return Err(Error::input(file, 0, "fabric.port_buffer_kb", "must be a positive number of KiB"));
        }
        c.port_buffer_bytes = Some((kb * 1024.0) as u64);
    }
    if let Some(alpha) = spec.dt_alpha {
        if c.buffer_model != BufferModel::EgressDynamic {
            let msg = "sets the dynamic threshold of each egress port: it needs `buffer_model = \"egress_dynamic\"`";
            return Err(Error::input(file, 0, "fabric.dt_alpha", msg));
        }
        if !(alpha.is_finite() && alpha > 0.0 && alpha <= 1024.0) {
            return Err(Error::input(file, 0, "fabric.dt_alpha", "must be a number in (0, 1024]"));
        }
        c.dt_alpha = alpha;
    }
    if let Some(kb) = spec.pfc_headroom_kb {
        let field = "fabric.pfc_headroom_kb";
        if c.infiniband() || !c.any_pfc() {
            return Err(Error::input(file, 0, field, "sets the PFC headroom: it needs a class with PFC on"));
        }
        if !(kb.is_finite() && kb >= 0.0) {
            return Err(Error::input(file, 0, field, "must be a number of KiB, at least 0"));
        }
        c.pfc_headroom_bytes = Some((kb * 1024.0) as u64);
    }
    if c.buffer_model.per_egress() && spec.iofd.is_some() {
        // IOFD's re-sequencer waits on the shared MMU's threshold, which per-egress buffers
        // do not have.
        let msg = "`per_port` and `egress_dynamic` do not compose with `[fabric.iofd]` (its re-sequencer \
                   waits on the shared buffer's threshold)";
        return Err(Error::input(file, 0, "fabric.buffer_model", msg));
    }
    Ok(())
}

/// Under per-egress buffers: every egress port of every switch must hold one full data frame
/// (an empty one, under `egress_dynamic`), or a lossy port drops everything it is sent.
pub(super) fn check_port_capacity(c: &SimConfig, topo: &Topology, file: &Path) -> Result<()> {
    let frame = c.data_wire(c.mtu) as u64;
    if c.buffer_model == BufferModel::EgressDynamic {
        let empty = (c.dt_alpha * c.buffer_bytes as f64) as u64;
        if empty < frame {
            let msg = format!(
                "an empty egress port may hold dt_alpha x buffer = {empty} bytes, less than one {frame}-byte frame"
            );
            return Err(Error::input(file, 0, "fabric.dt_alpha", msg));
        }
        return Ok(());
    }
    if c.buffer_model != BufferModel::PerPort {
        return Ok(());
    }
    let (field, each) = match c.port_buffer_bytes {
        Some(b) => ("fabric.port_buffer_kb", b),
        None => {
            let most_ports = topo.switches().map(|s| topo.nodes[s.idx()].ports.len()).max().unwrap_or(1);
            ("fabric.buffer_mb", c.buffer_bytes / most_ports.max(1) as u64)
        }
    };
    if each < frame {
        let msg = format!(
            "each egress port gets {each} bytes under `buffer_model = \"per_port\"`, less than one {frame}-byte frame"
        );
        return Err(Error::input(file, 0, field, msg));
    }
    Ok(())
}
