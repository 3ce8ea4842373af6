//! `[[tenants]]`: named sets of hosts, and the checks that traffic stays inside its tenant.
//!
//! ```toml
//! [[tenants]]
//! name = "attacker"
//! hosts = [1, 3]
//! ```
//! Tenant 0 is `default`, every host (a scenario may declare `default` to narrow it). A host
//! may be in several tenants. Every traffic source takes `tenant` (default `default`), and
//! its flows' sources and destinations must be hosts of that tenant.

use std::path::Path;

use serde::Deserialize;

use super::check_host;
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::tenancy::DEFAULT_TENANT;
use crate::topology::Topology;
use crate::workload::FlowSpec;

/// One `[[tenants]]` entry.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantSpec {
    /// Unique name.
    pub name: String,
    /// Its hosts.
    pub hosts: Vec<u32>,
}

/// The scenario's tenants, resolved: names by index, and each one's hosts (`None`: all).
#[derive(Clone, Debug)]
pub struct Tenants {
    names: Vec<String>,
    hosts: Vec<Option<Vec<NodeId>>>,
}

impl Tenants {
    /// Checks the entries: names unique and non-empty, hosts real hosts, listed once.
    pub fn build(specs: &[TenantSpec], file: &Path, topo: &Topology) -> Result<Tenants> {
        let mut t = Tenants { names: vec![DEFAULT_TENANT.into()], hosts: vec![None] };
        for (i, s) in specs.iter().enumerate() {
            let field = |f: &str| format!("tenants[{i}].{f}");
            if s.name.is_empty() {
                return Err(Error::input(file, 0, field("name"), "must not be empty"));
            }
            if specs[..i].iter().any(|o| o.name == s.name) {
                return Err(Error::input(file, 0, field("name"), format!("tenant `{}` is declared twice", s.name)));
            }
            if s.hosts.is_empty() {
                return Err(Error::input(file, 0, field("hosts"), "a tenant needs at least one host"));
            }
            let mut hosts = Vec::with_capacity(s.hosts.len());
            for &h in &s.hosts {
                let n = check_host(file, &field("hosts"), topo, h)?;
                if hosts.contains(&n) {
                    return Err(Error::input(file, 0, field("hosts"), format!("host {h} is listed twice")));
                }
                hosts.push(n);
            }
            if s.name == DEFAULT_TENANT {
                t.hosts[0] = Some(hosts);
            } else {
                t.names.push(s.name.clone());
                t.hosts.push(Some(hosts));
            }
        }
        if t.names.len() > u16::MAX as usize {
            return Err(Error::input(file, 0, "tenants", "too many tenants"));
        }
        Ok(t)
    }

    /// Names by index.
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The index of the tenant a traffic source names at `field` (absent: `default`).
    pub fn index(&self, file: &Path, field: &str, name: Option<&str>) -> Result<u16> {
        let name = name.unwrap_or(DEFAULT_TENANT);
        match self.names.iter().position(|n| n == name) {
            Some(i) => Ok(i as u16),
            None => Err(Error::input(
                file,
                0,
                field,
                format!("unknown tenant `{name}` (declared: {})", self.names.join(", ")),
            )),
        }
    }

    /// The hosts of tenant `t`, or `None` for every host.
    pub fn hosts(&self, t: u16) -> Option<&[NodeId]> {
        self.hosts[t as usize].as_deref()
    }

    /// Errors at `field` unless `host` belongs to tenant `t`.
    pub fn check_member(&self, file: &Path, field: &str, t: u16, host: NodeId) -> Result<()> {
        match self.hosts(t) {
            Some(hs) if !hs.contains(&host) => {
                let list: Vec<String> = hs.iter().map(|h| h.to_string()).collect();
                let msg =
                    format!("host {host} is not a host of tenant `{}` ({})", self.names[t as usize], list.join(", "));
                Err(Error::input(file, 0, field, msg))
            }
            _ => Ok(()),
        }
    }

    /// Errors at `field` unless every flow's source and destination belong to its tenant.
    pub fn check_flows(&self, file: &Path, field: &str, flows: &[FlowSpec]) -> Result<()> {
        for f in flows {
            self.check_member(file, field, f.tenant, f.src)?;
            self.check_member(file, field, f.tenant, f.dst)?;
        }
        Ok(())
    }
}
