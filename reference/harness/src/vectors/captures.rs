//! `vectors/pcap/<case-id>.pcap`: each session case as a packet capture (see
//! [`crate::pcap`]), written with the default MSS so that `vectors verify` checks them too.

use super::{Case, Input};
use crate::pcap::write::{pcap, Options};
use std::path::PathBuf;

/// Folder of the captures, relative to the repository root.
pub const DIR: &str = "vectors/pcap";

/// The capture of every session case, by path relative to the repository root.
pub fn files(cases: &[Case]) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let mut out = Vec::new();
    for case in cases {
        let Input::Session(s) = &case.input else {
            continue;
        };
        let turns = s.turns().map_err(|e| format!("{}: {e}", case.id))?;
        let bytes = pcap(&turns, &Options::default()).map_err(|e| format!("{}: {e}", case.id))?;
        out.push((PathBuf::from(DIR).join(format!("{}.pcap", case.id)), bytes));
    }
    Ok(out)
}
