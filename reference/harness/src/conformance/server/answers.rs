//! The server's CQL answers: SUPPORTED, READY or AUTHENTICATE to the handshake (or the
//! script's provocations), and the results of queries, prepares and executes on the canned
//! database of [`crate::cql`].

use super::connection::Conn;
use crate::conformance::cases::Provocation;
use crate::conformance::faults;
use crate::cql::database::{self, Route};
use crate::cql::messages;
use crate::wire_log::Dir;
use cqlframe::body;
use cqlframe::envelope::{opcode_name, EnvelopeHeader, Opcode, RESPONSE_BIT};
use std::sync::atomic::Ordering;

impl Conn {
    /// The answer to one request: its opcode, its body, and whether it is the fault's target;
    /// none when the request's version is refused (the connection then closes).
    pub(super) fn answer_request(
        &mut self,
        unframed: bool,
        h: &EnvelopeHeader,
        body: &[u8],
    ) -> Option<(Opcode, Vec<u8>, bool)> {
        let version = self.version;
        let script = self.shared.script.clone();
        let mut target = false;
        let (opcode, reply): (Opcode, Vec<u8>) = match Opcode::from_u8(h.opcode) {
            Some(Opcode::Options) => {
                self.shared.supported_sent.store(true, Ordering::SeqCst);
                (
                    Opcode::Supported,
                    messages::supported_body(&script.server_options(), script.max_version),
                )
            }
            Some(Opcode::Startup) if unframed && self.refusal(h) => return None,
            Some(Opcode::Startup) => {
                let options = body::read_string_map(body).unwrap_or_default();
                self.shared.with_conn(self.id, |r| {
                    r.startup_version = Some(version);
                    r.startup_options = options.clone();
                });
                let decided =
                    cqlframe::connection::negotiate(version, &options, &script.server_options());
                match decided {
                    _ if script.startup_error => {
                        self.shared.with_conn(self.id, |r| {
                            r.provocation = Some(Provocation::StartupError)
                        });
                        (
                            Opcode::Error,
                            body::error(
                                body::PROTOCOL_ERROR,
                                "STARTUP refused by the conformance server's script (startup_error)",
                            ),
                        )
                    }
                    Err(kind) => (
                        Opcode::Error,
                        body::error(body::PROTOCOL_ERROR, &format!("{kind} ({})", kind.rule())),
                    ),
                    Ok(_) if script.auth => {
                        let mut b = Vec::new();
                        body::put_string(&mut b, "org.apache.cassandra.auth.PasswordAuthenticator");
                        (Opcode::Authenticate, b)
                    }
                    Ok(_) if script.unpaired_response => {
                        self.send_unpaired(version);
                        (Opcode::Ready, vec![])
                    }
                    Ok(_) if script.negative_length => {
                        self.send_negative_length(version, h.stream);
                        return None;
                    }
                    Ok(_) => (Opcode::Ready, vec![]),
                }
            }
            Some(Opcode::AuthResponse) => (Opcode::AuthSuccess, 0i32.to_be_bytes().to_vec()),
            Some(Opcode::Register) => (Opcode::Ready, vec![]),
            Some(Opcode::Query) => match messages::request_query(body) {
                Ok(q) => {
                    let (reply, is_target) = self.answer(&q, None);
                    target = is_target;
                    (Opcode::Result, reply)
                }
                Err(e) => (Opcode::Error, body::error(body::PROTOCOL_ERROR, &e)),
            },
            Some(Opcode::Prepare) => match messages::request_query(body) {
                Ok(q) => {
                    let id = database::statement_id(&q);
                    self.shared
                        .prepared
                        .lock()
                        .unwrap()
                        .insert(id.clone(), q.clone());
                    let table = self.table_for(&q);
                    (
                        Opcode::Result,
                        messages::prepared_result(&id, version, &table),
                    )
                }
                Err(e) => (Opcode::Error, body::error(body::PROTOCOL_ERROR, &e)),
            },
            Some(Opcode::Execute) => {
                let id = messages::execute_id(body).unwrap_or_default();
                let query = self.shared.prepared.lock().unwrap().get(&id).cloned();
                match query {
                    Some(q) => {
                        let (reply, is_target) = self.answer(&q, Some(body));
                        target = is_target;
                        (Opcode::Result, reply)
                    }
                    None => {
                        let mut b = body::error(0x2500, "Unprepared statement");
                        body::put_short_bytes(&mut b, &id);
                        (Opcode::Error, b)
                    }
                }
            }
            Some(Opcode::Batch) => (Opcode::Result, messages::void_result()),
            _ => (
                Opcode::Error,
                body::error(
                    body::PROTOCOL_ERROR,
                    &format!("unexpected opcode {}", opcode_name(h.opcode)),
                ),
            ),
        };
        Some((opcode, reply, target))
    }

    /// Writes the unframed response that answers no request (script `unpaired_response`), past
    /// the server's own Connection, which would refuse it.
    pub(super) fn send_unpaired(&mut self, version: u8) {
        self.shared.log(
            self.id,
            Dir::S2c,
            "FAULT: unframed RESULT Void on stream 32752 (0x7ff0), which no request uses (LIFE-13)"
                .to_string(),
        );
        self.write(&faults::stray_envelope(version | RESPONSE_BIT));
        self.shared.with_conn(self.id, |r| {
            r.provocation = Some(Provocation::UnpairedResponse)
        });
    }

    /// Answers STARTUP with an unframed envelope header whose body length is negative (script
    /// `negative_length`), and nothing after it: the client cannot find the next envelope.
    fn send_negative_length(&mut self, version: u8, stream: i16) {
        self.shared.log(
            self.id,
            Dir::S2c,
            "FAULT: unframed READY header with body length -2 (ENV-3), no body".to_string(),
        );
        self.write(&faults::negative_length_header(
            version | RESPONSE_BIT,
            stream,
        ));
        self.shared.with_conn(self.id, |r| {
            r.provocation = Some(Provocation::NegativeLength)
        });
    }

    /// The RESULT body for a query, and whether it is a target of the fault (ks.t rows).
    pub(super) fn answer(&mut self, query: &str, _execute: Option<&[u8]>) -> (Vec<u8>, bool) {
        let script = &self.shared.script;
        match database::route(query, self.keyspace.as_deref()) {
            Route::Use(ks) => {
                self.keyspace = Some(ks.clone());
                (messages::set_keyspace_result(&ks), false)
            }
            Route::Insert => {
                if let Some(blob) = database::first_blob_literal(query) {
                    let ok = blob == database::blob_pattern(blob.len());
                    self.shared
                        .obs
                        .lock()
                        .unwrap()
                        .inserts
                        .push((blob.len(), ok));
                }
                (messages::void_result(), false)
            }
            Route::Void => (messages::void_result(), false),
            Route::TestTable => (
                messages::rows_result(&database::test_table(script.rows, script.row_size)),
                true,
            ),
            _ => (messages::rows_result(&self.table_for(query)), false),
        }
    }

    pub(super) fn table_for(&self, query: &str) -> messages::Table {
        let script = &self.shared.script;
        match database::route(query, self.keyspace.as_deref()) {
            Route::Local => database::project(database::system_local(self.shared.port), query),
            Route::Peers => {
                let table = if query.to_ascii_lowercase().contains("peers_v2") {
                    database::system_peers("peers_v2")
                } else {
                    database::system_peers("peers")
                };
                database::project(table, query)
            }
            Route::TestTable => database::test_table(script.rows, script.row_size),
            _ => database::empty_table("system", "unknown"),
        }
    }
}
