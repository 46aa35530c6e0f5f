//! A connection's wire log as the proxy keeps it: the first lines, then a count of the rest,
//! so that a long-lived connection holds a bounded log.

use crate::wire_log::{Dir, Line};
use std::time::Instant;

pub struct WireLog {
    started: Instant,
    limit: usize,
    pub lines: Vec<Line>,
    /// Lines past the limit, not kept.
    pub dropped: usize,
}

impl WireLog {
    pub fn new(limit: usize) -> Self {
        WireLog {
            started: Instant::now(),
            limit,
            lines: Vec::new(),
            dropped: 0,
        }
    }

    pub fn push(&mut self, dir: Dir, text: String) {
        if self.lines.len() < self.limit {
            let t_ms = self.started.elapsed().as_secs_f64() * 1e3;
            self.lines.push(Line { t_ms, dir, text });
        } else {
            self.dropped += 1;
        }
    }
}
