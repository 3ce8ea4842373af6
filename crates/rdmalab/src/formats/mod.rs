//! Readers and writers of the ns-3 HPCC simulator and htsim file formats.
