//! The discrete-event core: a time-ordered event queue and deterministic random streams.
//! It knows nothing about networks; `sim` gives meaning to the events.

pub mod queue;
pub mod rng;

pub use queue::EventQueue;
pub use rng::{stream, Rng, StreamKind};
