//! How responses go out: unframed before the switch, then framed by the script's layout, packed
//! per read, with the fault put into its target, written in the script's chunks and held to the
//! driver's reads where the case needs read boundaries (see [`delivery`]), else in writes whose
//! segments never end inside a frame header (see [`segments`]).

use super::connection::{Conn, MAX_BODY};
use super::recording::FaultRecord;
use crate::conformance::delivery::{self, Boundary};
use crate::conformance::faults::{self, NotApplicable};
use crate::conformance::layout::Layout;
use crate::conformance::segments::{self, FrameHeaders};
use crate::fault_builder::serialise;
use crate::rules::Direction;
use crate::wire_log::Dir;
use cqlframe::decoder::{Decoder, Event};
use cqlframe::envelope::{Opcode, ENVELOPE_HEADER_LEN};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl Conn {
    /// Writes one response: unframed before the switch (through the Connection, which switches
    /// on the STARTUP response), framed by the script's layout after it.
    pub(super) fn respond(
        &mut self,
        envelope: Vec<u8>,
        opcode: Opcode,
        stream: i16,
        what: String,
        target: bool,
    ) {
        let line = format!(
            "{} stream {} ({} bytes){}",
            opcode.name(),
            stream,
            envelope.len() - ENVELOPE_HEADER_LEN,
            if what.is_empty() {
                String::new()
            } else {
                format!(": {what}")
            }
        );
        let Some(n) = self.conn.negotiated() else {
            let mut out = Vec::new();
            if let Err(e) = self.conn.send(&[&envelope], &mut out) {
                self.shared
                    .log(self.id, Dir::Note, format!("server send refused: {e}"));
                return;
            }
            self.shared
                .log(self.id, Dir::S2c, format!("unframed {line}"));
            self.write(&out);
            if let Some(n) = self.conn.negotiated() {
                let layout = Layout::new(n.settings, &self.shared.script);
                self.shared.log(
                    self.id,
                    Dir::Note,
                    format!(
                        "server frames from byte {}: {n}; capacity {}, split at {}{}",
                        self.sent,
                        layout.capacity,
                        layout.split_at,
                        match self.shared.script.chop {
                            0 => String::new(),
                            c => format!(", written in {c}-byte chunks"),
                        }
                    ),
                );
                self.shared.with_conn(self.id, |r| r.negotiated = Some(n));
                self.mirror = Some(Decoder::starting_at(n.settings, MAX_BODY, self.sent));
                self.headers = self
                    .guard
                    .is_some()
                    .then(|| FrameHeaders::new(n.settings.format, self.sent));
                self.layout = Some(layout);
            }
            return;
        };
        if self.layout.is_none() {
            self.layout = Some(Layout::new(n.settings, &self.shared.script));
        }
        self.shared.log(self.id, Dir::S2c, line);
        if target {
            self.shared.obs.lock().unwrap().target_served += 1;
        }
        self.pending.push((envelope, target));
    }

    /// Frames the responses of one read together (packed unless the script says otherwise);
    /// the fault's target gets frames of its own so that the fault hits only it.
    pub(super) fn flush_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let Some(layout) = self.layout.clone() else {
            return;
        };
        if pending.is_empty() {
            return;
        }
        let mut bytes = Vec::new();
        if self.shared.script.empty_frames {
            layout.frame(&[], true).write(&mut bytes);
        }
        let mut close = false;
        let mut batch: Vec<Vec<u8>> = Vec::new();
        for (envelope, target) in pending {
            let fault = match &self.shared.script.fault {
                Some(f) if target && !self.shared.fault_used.swap(true, Ordering::SeqCst) => {
                    f.clone()
                }
                _ => {
                    batch.push(envelope);
                    continue;
                }
            };
            bytes.extend(serialise(&layout.frames(&batch)));
            batch.clear();
            match faults::apply(&fault, &layout, &envelope) {
                Ok(f) => {
                    let note = format!("FAULT {}: {}", fault.kind, f.note);
                    self.shared.log(self.id, Dir::Note, note);
                    let at_ms = self.shared.ms();
                    self.shared.obs.lock().unwrap().fault = Some(FaultRecord {
                        conn: self.id,
                        at_ms,
                        note: f.note,
                    });
                    self.fault_at = Some(Instant::now());
                    bytes.extend_from_slice(&f.bytes);
                    if f.close {
                        close = true;
                        break;
                    }
                }
                Err(NotApplicable(why)) => {
                    self.shared
                        .log(self.id, Dir::Note, format!("fault not applicable: {why}"));
                    self.shared.obs.lock().unwrap().fault_not_applicable = Some(why);
                    bytes.extend(serialise(&layout.frames(&[envelope])));
                }
            }
        }
        if !close {
            bytes.extend(serialise(&layout.frames(&batch)));
        }
        self.write(&bytes);
        if close {
            // The driver reads the cut bytes before it learns of the close, on every run.
            if self.shared.script.chop == 0 {
                self.confirm_read(self.sent);
            }
            self.closed = true;
        }
    }

    /// Writes bytes to the socket (chopped as the script says, else keeping segments from ending
    /// inside a frame header) and feeds them to the mirror decoder for the wire log.
    pub(super) fn write(&mut self, bytes: &[u8]) {
        if let Some(mirror) = &mut self.mirror {
            if !self.mirror_failed {
                let mut lines = Vec::new();
                let r = mirror.decode(bytes, |event| {
                    if let Event::Frame(f) = event {
                        lines.push(crate::wire_log::frame_line(f));
                    }
                    Ok(())
                });
                for l in lines {
                    self.shared.log(self.id, Dir::S2c, l);
                }
                if let Err(e) = r {
                    self.mirror_failed = true;
                    self.shared.log(
                        self.id,
                        Dir::Note,
                        format!("a conformant client stops here: {e}"),
                    );
                }
            }
        }
        self.sent += bytes.len() as u64;
        self.shared.with_conn(self.id, |r| r.record(false, bytes));
        self.judge_bytes(Direction::ServerToClient, bytes);
        let mut written = self.sent - bytes.len() as u64;
        let chop = self.shared.script.chop;
        if chop == 0 {
            let done = match (&mut self.headers, &mut self.guard) {
                (Some(h), Some(guard)) => {
                    h.feed(bytes);
                    let headers = h.after(written);
                    segments::write_all(&mut self.stream, guard, written, bytes, headers)
                }
                _ => self.stream.write_all(bytes),
            };
            self.closed |= done.is_err();
            return;
        }
        for piece in bytes.chunks(chop) {
            if self.stream.write_all(piece).is_err() {
                self.closed = true;
                return;
            }
            written += piece.len() as u64;
            self.confirm_read(written);
        }
    }

    /// Waits until the driver has read the `written` bytes written so far (see [`delivery`]),
    /// and records the boundary. After the first that fails, or once the driver closed, the
    /// server writes on without waiting: the case is not exercised as written then, or is over.
    pub(super) fn confirm_read(&mut self, written: u64) {
        let Some(watch) = &self.reads else {
            return;
        };
        let boundary = match watch {
            Ok(socket) => socket.wait_read(written, delivery::BOUND),
            Err(_) => Boundary::Unobservable,
        };
        match boundary {
            Boundary::Confirmed => {
                self.shared.with_conn(self.id, |r| r.reads.confirmed += 1);
                return;
            }
            Boundary::Closed => {}
            failed => {
                let note = match (failed, watch) {
                    (_, Err(e)) => format!("the driver's reads cannot be observed here ({e})"),
                    (
                        Boundary::Unconfirmed {
                            written,
                            received,
                            unread,
                        },
                        _,
                    ) => format!(
                        "the driver did not read byte {written} within {} s (its socket had \
                         received {received} bytes, {unread} of them unread): later writes \
                         are not held back",
                        delivery::BOUND.as_secs()
                    ),
                    _ => "the driver's reads cannot be observed".to_string(),
                };
                self.shared.log(self.id, Dir::Note, note);
                self.shared
                    .with_conn(self.id, |r| r.reads.unconfirmed = Some(failed));
            }
        }
        self.reads = None;
    }
}
