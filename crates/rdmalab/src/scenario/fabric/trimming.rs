//! `[fabric.trimming]`: switches trim a UET data packet to its header instead of queueing it
//! past a threshold or dropping it (`sim::mech::trimming`).
//!
//! ```toml
//! [fabric]
//! lossless = false          # the usual pairing; PFC on works too
//! [fabric.trimming]
//! threshold_kb = 100        # egress queue of the packet's class; absent: trim only what
//!                           # the buffer would drop
//! header_bytes = 64         # the trimmed packet on the wire (default: fabric.header_bytes)
//! class = 0                 # the class the header is queued in (strict priority)
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::config::sim_config::TrimConfig;
use crate::error::{Error, Result};

/// `[fabric.trimming]` as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrimmingSpec {
    /// Trim a packet that would find this many KB (1000 bytes) in its egress queue, itself
    /// included (absent: only a packet the buffer would drop).
    pub threshold_kb: Option<u64>,
    /// Bytes of a trimmed packet on the wire, at most a full data packet (default:
    /// `fabric.header_bytes`).
    pub header_bytes: Option<u32>,
    /// The class the trimmed header is queued in, 0..7 (default 0, the highest priority).
    pub class: Option<u8>,
}

impl TrimmingSpec {
    /// The checked settings; `header_bytes` is the fabric's data header, `full` a full data
    /// packet's wire bytes (`fabric.mtu` of payload and the headers).
    pub fn build(&self, header_bytes: u32, full: u32, file: &Path) -> Result<TrimConfig> {
        let f = |name: &str| format!("fabric.trimming.{name}");
        let threshold = match self.threshold_kb {
            Some(0) => return Err(Error::input(file, 0, f("threshold_kb"), "must be at least 1 KB")),
            Some(kb) => Some(kb * 1000),
            None => None,
        };
        let header = self.header_bytes.unwrap_or(header_bytes);
        if header == 0 {
            return Err(Error::input(file, 0, f("header_bytes"), "must be at least 1 byte"));
        }
        if header > full {
            // Trimming cuts a packet to its header: a header longer than a full packet would
            // make every trimmed packet grow on the wire.
            let m = format!(
                "{header} bytes is more than a full data packet ({full} bytes: `fabric.mtu` and its headers); \
                 a trimmed packet is cut to this many bytes"
            );
            return Err(Error::input(file, 0, f("header_bytes"), m));
        }
        let class = self.class.unwrap_or(0);
        if class as usize >= crate::fabric::NUM_PRIOS {
            let m = format!("{class} is not a class (0..{})", crate::fabric::NUM_PRIOS - 1);
            return Err(Error::input(file, 0, f("class"), m));
        }
        Ok(TrimConfig { threshold, header_bytes: header, class })
    }
}
