//! `res.chakra`: one row per node of each trace-driven job (`app::trace_nodes`), with its
//! start, end and the node it waited on last, from the transfers' times.

use crate::sim::Simulation;
use crate::stats::table::Table;
use crate::units::Time;

/// The table's name.
pub(in crate::sim) const NAME: &str = "chakra";

impl Simulation {
    /// The per-node table of every trace-driven job (none when the run has no such job).
    /// Times in ps (`*_ps`, NaN: not done), `waited_on` the id of the node waited on last
    /// (NaN: none).
    pub(in crate::sim) fn trace_tables(&self) -> Vec<Table> {
        let mut cols = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut start, mut end, mut waited, mut row) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let ps = |t: Time| if t == Time::MAX { f64::NAN } else { t.0 as f64 };
        for (j, job) in self.apps.jobs.iter().enumerate() {
            let Some(nodes) = &job.nodes else { continue };
            let times = nodes.times(&job.graph, &self.transfer_times(job));
            for (i, n) in nodes.rows.iter().enumerate() {
                cols.0.push(j as u64);
                cols.1.push(u64::from(n.rank));
                cols.2.push(n.id);
                cols.3.push(n.name.clone());
                cols.4.push(n.kind.to_string());
                cols.5.push(n.bytes);
                row.push(i as u64);
                start.push(ps(times.start[i]));
                end.push(ps(times.end[i]));
                let w = times.waited[i];
                waited.push(if w == u32::MAX { f64::NAN } else { nodes.rows[w as usize].id as f64 });
            }
        }
        if row.is_empty() {
            return Vec::new();
        }
        vec![Table::new(NAME, &["job", "row"])
            .u64("job", cols.0)
            .u64("row", row)
            .u64("rank", cols.1)
            .u64("node_id", cols.2)
            .text("name", cols.3)
            .text("kind", cols.4)
            .u64("bytes", cols.5)
            .f64("start_ps", start)
            .f64("end_ps", end)
            .f64("waited_on", waited)]
    }
}
