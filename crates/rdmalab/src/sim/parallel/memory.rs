//! Whether the machine holds another partition: every partition is a whole copy of the
//! fabric's arenas (ports, MMUs, NICs, QPs), so at a million hosts two of them need some
//! 16.5 GB where one thread needs 9.8 GB (through `rdmalab run`). `auto` measures the first copy it builds and cuts
//! no further than the memory the kernel reports available; an explicit `--threads N` is
//! built as asked.

use crate::sim::Simulation;

/// What the first partition cost, and the rule for the rest.
pub(super) struct CopyBudget {
    resident_before: u64,
}

/// The bytes a simulation's largest arenas hold (ports, switch buffers' accounting, NICs,
/// QPs, CC groups, flows, routes, the topology): a floor under what a copy costs, which a
/// process that reuses memory it freed earlier does not show as resident growth.
pub(super) fn arena_bytes(sim: &Simulation) -> u64 {
    use std::mem::size_of_val;
    fn vec<T>(v: &Vec<T>) -> usize {
        v.capacity() * std::mem::size_of::<T>()
    }
    let mmus: usize = sim.mmus.iter().map(|m| size_of_val(m) + m.heap_bytes()).sum();
    let bytes = vec(&sim.ports)
        + mmus
        + vec(&sim.nics)
        + vec(&sim.qps)
        + vec(&sim.groups)
        + vec(&sim.flows)
        + vec(&sim.ideal)
        + vec(&sim.qp_flow)
        + sim.routes.table_bytes()
        + vec(&sim.topo.nodes)
        + vec(&sim.topo.links);
    bytes as u64
}

/// The memory the cut still needs once its first copy is built, in copies: the further
/// copies, and what the run adds in all of them (packets, events, per-flow state). At a
/// million hosts (`fat_tree_1M.toml`, all flows live at once) one copy was 5.7 GB after
/// setup and the cut in two peaked at 17.6 GB, about 2.0 copies above the first: budget one
/// copy for the run's growth, and 10 % on top.
fn copies_needed(more: usize) -> f64 {
    (more + 1) as f64 * 1.1
}

/// Overrides the available memory, in bytes (tests; a machine shared with other work).
pub const AVAILABLE_ENV: &str = "RDMALAB_MEMORY_AVAILABLE";

impl CopyBudget {
    /// Starts measuring, where this platform tells resident memory (Linux).
    pub(super) fn start() -> Option<CopyBudget> {
        resident_bytes().map(|resident_before| CopyBudget { resident_before })
    }

    /// After the first partition (`first`) is built: None when `more` further copies fit,
    /// else why not. A copy costs what the first one grew the process by, and at least its
    /// arenas.
    pub(super) fn refuse(&self, first: &Simulation, more: usize) -> Option<String> {
        let grown = resident_bytes()?.saturating_sub(self.resident_before);
        let copy = grown.max(arena_bytes(first));
        let available = available_bytes()?;
        let needed = (copy as f64 * copies_needed(more)) as u64;
        (needed > available).then(|| {
            format!(
                "threads = \"auto\" runs on one thread: {} partitions would need about {} more (each is a copy \
                 of the fabric, {} here), and {} are available ({}); give --threads to cut anyway",
                more + 1,
                size(needed),
                size(copy),
                size(available),
                if std::env::var_os(AVAILABLE_ENV).is_some() { AVAILABLE_ENV } else { "MemAvailable" },
            )
        })
    }
}

/// Bytes as MB below a GB, else GB.
fn size(bytes: u64) -> String {
    match bytes as f64 {
        b if b < 1e9 => format!("{:.0} MB", b / 1e6),
        b => format!("{:.1} GB", b / 1e9),
    }
}

/// This process's resident bytes (Linux: `VmRSS` of `/proc/self/status`), None elsewhere.
fn resident_bytes() -> Option<u64> {
    kilobytes("/proc/self/status", "VmRSS:")
}

/// Bytes the kernel can hand out without swapping (`MemAvailable`), or `AVAILABLE_ENV`.
fn available_bytes() -> Option<u64> {
    match std::env::var_os(AVAILABLE_ENV) {
        Some(v) => v.to_str()?.trim().parse().ok(),
        None => kilobytes("/proc/meminfo", "MemAvailable:"),
    }
}

/// The `key:  N kB` line of a /proc file, in bytes.
fn kilobytes(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let kb: u64 = text.lines().find(|l| l.starts_with(key))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
