//! Completed flows' records: held in memory up to `SimConfig::records_in_memory`, then
//! written out in runs (`stats::spill`), so that a run's memory does not grow with the flows
//! it completed. The results read them back in the run's order.

use super::Simulation;
use crate::stats::spill::{output_key, Spill, SpilledRecords};
use crate::stats::FlowRecord;

impl Simulation {
    /// Keeps a completed flow's record; writes the held ones out once there are enough.
    pub(super) fn push_record(&mut self, r: FlowRecord) {
        self.records.push(r);
        if self.records.len() >= self.cfg.records_in_memory {
            self.spill_records();
        }
    }

    /// Writes the held records out as one run (sorted as the results report them, in the
    /// origin order). If the file cannot be written, the records stay in memory, as they did
    /// before there was a file, and a warning says so.
    #[cold]
    fn spill_records(&mut self) {
        if self.origin_order {
            self.records.sort_by_key(output_key);
        }
        let written = match &mut self.spill {
            Some(s) => s.write_run(&self.records),
            None => Spill::create().and_then(|mut s| s.write_run(&self.records).map(|()| self.spill = Some(s))),
        };
        match written {
            Ok(()) => self.records.clear(),
            Err(e) => {
                self.warnings.push(format!(
                    "completed flows' records are kept in memory: their temporary file in {} failed ({e})",
                    std::env::temp_dir().display()
                ));
                self.cfg.records_in_memory = usize::MAX;
            }
        }
    }

    /// What was written out, for the results (nothing when all are held).
    pub(super) fn spilled_records(&self) -> SpilledRecords {
        SpilledRecords { parts: self.spill.iter().cloned().collect(), sorted: self.origin_order }
    }

    /// Completed flows' records held in memory now (at most `SimConfig::records_in_memory`).
    pub fn records_held(&self) -> usize {
        self.records.len()
    }
}

impl super::Results {
    /// Flows completed: those held and those written out.
    pub fn flows_completed(&self) -> usize {
        self.records.len() + self.spilled.len() as usize
    }

    /// Calls `f` with every completed flow's record in the run's order (what `records`
    /// holds when nothing was written out), the receiver's counts joined in.
    pub fn each_record(&self, f: impl FnMut(&FlowRecord) -> std::io::Result<()>) -> std::io::Result<()> {
        if self.spilled.is_empty() {
            return self.records.iter().try_for_each(f); // joined already
        }
        self.spilled.for_each(&self.records, &self.flow_rx, f)
    }

    /// Every completed flow's record in memory at once (for a table the caller keeps).
    pub fn all_records(&self) -> std::io::Result<Vec<FlowRecord>> {
        let mut all = Vec::with_capacity(self.flows_completed());
        self.each_record(|r| {
            all.push(*r);
            Ok(())
        })?;
        Ok(all)
    }

    /// Writes the reference's FCT file of every completed flow, streamed in the run's order.
    pub fn write_fct(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        self.each_record(|r| crate::formats::fct::write_fct_line(w, &crate::formats::fct::FctLine::from_record(r)))
    }
}
