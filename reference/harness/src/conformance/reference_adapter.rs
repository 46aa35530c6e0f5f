//! The reference adapter: a small CQL client on a client-role [`Connection`], run as
//! `cqlframe conformance client --host H --port P --case ID --action A ...` by
//! `conformance/drivers/reference/run`. It follows the adapter contract of
//! `conformance/README.md` and is expected to PASS every case.

use crate::cql::{database, messages};
use cqlframe::body;
use cqlframe::connection::{version_flags, Connection, ConnectionEvent, Role};
use cqlframe::encoder::SplitPolicy;
use cqlframe::envelope::{envelope_bytes, EnvelopeHeader, Opcode};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// What the reference adapter is asked to do: the adapter contract's arguments
/// (conformance/README.md), as `cqlframe conformance client` parses them.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ClientOptions {
    #[cfg_attr(feature = "clap", arg(long, default_value = "127.0.0.1"))]
    pub host: String,
    #[cfg_attr(feature = "clap", arg(long))]
    pub port: u16,
    #[cfg_attr(feature = "clap", arg(long, default_value = ""))]
    pub case: String,
    #[cfg_attr(feature = "clap", arg(long, default_value = "select"))]
    pub action: String,
    #[cfg_attr(feature = "clap", arg(long, default_value = "default"))]
    pub compression: String,
    #[cfg_attr(feature = "clap", arg(long, default_value = "default"))]
    pub checksum: String,
    #[cfg_attr(feature = "clap", arg(long, default_value = "default"))]
    pub protocol: String,
    #[cfg_attr(feature = "clap", arg(long))]
    pub auth: bool,
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub blob_size: usize,
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub requests: usize,
    /// Seconds before a request is given up.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 10.0))]
    pub timeout: f64,
}

const ACTIONS: [&str; 6] = [
    "connect",
    "select",
    "prepare-select",
    "concurrent-select",
    "insert-large",
    "idle-select",
];

struct Client {
    stream: TcpStream,
    conn: Connection,
    version: u8,
    flags: u8,
    inbox: VecDeque<(EnvelopeHeader, Vec<u8>)>,
    next_stream: i16,
    deadline: Duration,
}

impl Client {
    fn send(&mut self, envelopes: &[Vec<u8>]) -> Result<(), String> {
        let refs: Vec<&[u8]> = envelopes.iter().map(|e| e.as_slice()).collect();
        let mut out = Vec::new();
        self.conn
            .send(&refs, &mut out)
            .map_err(|e| format!("send refused: {e}"))?;
        self.stream
            .write_all(&out)
            .map_err(|e| format!("write: {e}"))
    }

    fn request(&mut self, opcode: Opcode, body: &[u8]) -> (i16, Vec<u8>) {
        let stream = self.next_stream;
        self.next_stream += 1;
        (
            stream,
            envelope_bytes(self.version, self.flags, stream, opcode, body),
        )
    }

    /// The response on `stream`, or an ERROR on any stream (a version refusal need not use the
    /// request's stream, LIFE-11).
    fn wait_any(&mut self, stream: i16) -> Result<(EnvelopeHeader, Vec<u8>), String> {
        self.wait_where(stream, true)
    }

    /// Reads until the response on `stream` arrives.
    fn wait(&mut self, stream: i16) -> Result<(EnvelopeHeader, Vec<u8>), String> {
        self.wait_where(stream, false)
    }

    /// A framing error fails the request and the connection (ERR-2): nothing more is read.
    fn wait_where(
        &mut self,
        stream: i16,
        any_error: bool,
    ) -> Result<(EnvelopeHeader, Vec<u8>), String> {
        let start = Instant::now();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if let Some(i) = self.inbox.iter().position(|(h, _)| {
                h.stream == stream || (any_error && h.opcode == Opcode::Error as u8)
            }) {
                return Ok(self.inbox.remove(i).expect("found"));
            }
            if start.elapsed() > self.deadline {
                return Err(format!("timeout waiting for stream {stream}"));
            }
            let n = match self.stream.read(&mut buf) {
                Ok(0) => {
                    return Err(match self.conn.finish() {
                        Err(e) => format!("framing error: {e}"),
                        Ok(()) => "connection closed by the server".into(),
                    })
                }
                Ok(n) => n,
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => continue,
                Err(e) => return Err(format!("read: {e}")),
            };
            let inbox = &mut self.inbox;
            self.conn
                .receive(&buf[..n], |event| {
                    match event {
                        ConnectionEvent::Unframed { envelope, .. }
                        | ConnectionEvent::Envelope(envelope) => {
                            inbox.push_back((envelope.header, envelope.body.to_vec()))
                        }
                        ConnectionEvent::Rejected { error, .. } => return Err(error),
                        _ => {}
                    }
                    Ok(())
                })
                .map_err(|e| {
                    let _ = self.stream.shutdown(std::net::Shutdown::Both);
                    format!("framing error: {e}")
                })?;
        }
    }
}

fn error_text(body: &[u8]) -> String {
    body::read_error(body)
        .map(|(c, m)| format!("server error {c:#06x}: {m}"))
        .unwrap_or_else(|_| "malformed ERROR".into())
}

/// A RESULT's rows as the adapter contract reports them.
fn rows_result(header: &EnvelopeHeader, body: &[u8]) -> Value {
    match Opcode::from_u8(header.opcode) {
        Some(Opcode::Result) => match messages::parse_kv_rows(body) {
            Ok(Some(rows)) => json!({
                "rows": rows.len(),
                "digest": database::rows_digest(rows.iter().map(|(k, v)| (*k, v.as_slice()))),
            }),
            Ok(None) => json!({"ok": true}),
            Err(e) => json!({"error": format!("malformed RESULT: {e}")}),
        },
        Some(Opcode::Error) => json!({"error": error_text(body)}),
        _ => json!({"error": format!("unexpected opcode {}", header.opcode)}),
    }
}

/// Runs the workload; prints the JSON report; returns the exit code of the contract.
pub fn run(args: ClientOptions) -> u8 {
    let mut report = json!({
        "contract": super::contract::CONTRACT,
        "driver": "reference",
        "driver_version": env!("CARGO_PKG_VERSION"),
        "case": args.case,
        "action": args.action,
    });
    if !ACTIONS.contains(&args.action.as_str()) {
        report["unsupported"] = json!(format!("unknown action {:?}", args.action));
        println!("{report}");
        return 127;
    }
    let (results, error, negotiated) = match workload(&args) {
        Ok((results, negotiated)) => (results, None, negotiated),
        Err((results, e, negotiated)) => (results, Some(e), negotiated),
    };
    let failed = error.is_some() || results.iter().any(|r| r.get("error").is_some());
    report["results"] = Value::Array(results);
    report["error"] = json!(error);
    report["negotiated"] = negotiated;
    println!("{report}");
    u8::from(failed)
}

type Outcome = Result<(Vec<Value>, Value), (Vec<Value>, String, Value)>;

fn workload(args: &ClientOptions) -> Outcome {
    let fail = |results: Vec<Value>, e: String, n: Value| Err((results, e, n));
    let mut version: u8 = match args.protocol.as_str() {
        "4" => 4,
        "6" => 6,
        _ => 5,
    };
    let mut refused = Vec::new();
    // OPTIONS, then STARTUP, on a new connection; a refusal of the version (an ERROR in another
    // version, on any stream, LIFE-11) to either means a new connection with the version it
    // names (LIFE-9).
    let (mut c, negotiated) = 'connect: loop {
        let stream = match TcpStream::connect((args.host.as_str(), args.port)) {
            Ok(s) => s,
            Err(e) => return fail(vec![], format!("connect: {e}"), Value::Null),
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
        let mut c = Client {
            stream,
            conn: Connection::new(Role::Client, 256 << 20, SplitPolicy::DRIVERS),
            version,
            flags: version_flags(version),
            inbox: VecDeque::new(),
            next_stream: 0,
            deadline: Duration::from_secs_f64(args.timeout),
        };
        let refusal = |h: &EnvelopeHeader, version: u8| {
            h.opcode == Opcode::Error as u8
                && h.protocol_version() < version
                && h.protocol_version() >= 3
        };
        let (s, options) = c.request(Opcode::Options, &[]);
        if let Err(e) = c.send(&[options]) {
            return fail(vec![], e, Value::Null);
        }
        let supported = match c.wait_any(s) {
            Ok((h, b)) if h.opcode == Opcode::Supported as u8 => b,
            Ok((h, _)) if refusal(&h, version) => {
                refused.push(version);
                version = h.protocol_version();
                continue 'connect;
            }
            Ok((_, b)) => return fail(vec![], error_text(&b), Value::Null),
            Err(e) => return fail(vec![], e, Value::Null),
        };
        let map = body::read_string_multimap(&supported).unwrap_or_default();
        let offered = |key: &str, value: &str| {
            map.iter().any(|(k, vs)| {
                k.eq_ignore_ascii_case(key) && vs.iter().any(|v| v.eq_ignore_ascii_case(value))
            })
        };
        let mut startup = vec![("CQL_VERSION".to_string(), "3.0.0".to_string())];
        let lz4 = version >= 5
            && match args.compression.as_str() {
                "none" => false,
                "lz4" => true,
                _ => offered("COMPRESSION", "lz4"),
            };
        if lz4 {
            startup.push(("COMPRESSION".into(), "lz4".into()));
        }
        let checksum = match args.checksum.as_str() {
            "crc32" if offered("FRAME_CHECKSUMS", "crc32") => Some("crc32"),
            "crc32c" | "default" if offered("FRAME_CHECKSUMS", "crc32c") => Some("crc32c"),
            _ => None,
        };
        if let Some(ck) = checksum {
            startup.push(("FRAME_CHECKSUM".into(), ck.into()));
        }
        let negotiated = json!({
            "refused_versions": refused,
            "protocol_version": version,
            "compression": if lz4 { "lz4" } else { "none" },
            "frame_checksum": checksum.unwrap_or("crc32"),
            "opted_in_crc32c": checksum == Some("crc32c"),
        });
        let (s, env) = c.request(Opcode::Startup, &body::string_map(&startup));
        if let Err(e) = c.send(&[env]) {
            return fail(vec![], e, negotiated);
        }
        match c.wait_any(s) {
            Ok((h, _)) if h.opcode == Opcode::Ready as u8 => {}
            Ok((h, _)) if h.opcode == Opcode::Authenticate as u8 => {
                let mut token = Vec::new();
                let plain = b"\0cassandra\0cassandra";
                token.extend_from_slice(&(plain.len() as i32).to_be_bytes());
                token.extend_from_slice(plain);
                let (s, env) = c.request(Opcode::AuthResponse, &token);
                if let Err(e) = c.send(&[env]) {
                    return fail(vec![], e, negotiated);
                }
                match c.wait(s) {
                    Ok((h, _)) if h.opcode == Opcode::AuthSuccess as u8 => {}
                    Ok((_, b)) => return fail(vec![], error_text(&b), negotiated),
                    Err(e) => return fail(vec![], e, negotiated),
                }
            }
            Ok((h, _)) if refusal(&h, version) => {
                refused.push(version);
                version = h.protocol_version();
                continue 'connect;
            }
            // An ERROR response to STARTUP: close the connection (LIFE-10; dropping `c`).
            Ok((_, b)) => return fail(vec![], error_text(&b), negotiated),
            Err(e) => return fail(vec![], e, negotiated),
        }
        break (c, negotiated);
    };
    let mut results = Vec::new();
    let select = "SELECT k, v FROM ks.t";
    match args.action.as_str() {
        "connect" => {
            let (s, env) = c.request(
                Opcode::Query,
                &messages::query_body("SELECT * FROM system.local WHERE key='local'", version),
            );
            let r = c.send(&[env]).and_then(|_| c.wait(s));
            match r {
                Ok((h, _)) if h.opcode == Opcode::Result as u8 => results.push(json!({"ok": true})),
                Ok((_, b)) => results.push(json!({"error": error_text(&b)})),
                Err(e) => results.push(json!({"error": e})),
            }
        }
        "idle-select" => {
            // The reference's heartbeat: one OPTIONS after the switch (framed, LIFE-5), whose
            // SUPPORTED must come back framed (LIFE-4), then the select.
            std::thread::sleep(Duration::from_secs(1));
            let (s, env) = c.request(Opcode::Options, &[]);
            match c.send(&[env]).and_then(|_| c.wait(s)) {
                Ok((h, _)) if h.opcode == Opcode::Supported as u8 => {
                    let (s, env) = c.request(Opcode::Query, &messages::query_body(select, version));
                    match c.send(&[env]).and_then(|_| c.wait(s)) {
                        Ok((h, b)) => results.push(rows_result(&h, &b)),
                        Err(e) => results.push(json!({"error": e})),
                    }
                }
                Ok((_, b)) => results.push(json!({"error": error_text(&b)})),
                Err(e) => results.push(json!({"error": e})),
            }
        }
        "select" => {
            let (s, env) = c.request(Opcode::Query, &messages::query_body(select, version));
            match c.send(&[env]).and_then(|_| c.wait(s)) {
                Ok((h, b)) => results.push(rows_result(&h, &b)),
                Err(e) => results.push(json!({"error": e})),
            }
        }
        "prepare-select" => {
            let (s, env) = c.request(Opcode::Prepare, &messages::prepare_body(select, version));
            let prepared = c.send(&[env]).and_then(|_| c.wait(s)).and_then(|(h, b)| {
                if h.opcode == Opcode::Result as u8 {
                    messages::parse_prepared(&b, version)
                } else {
                    Err(error_text(&b))
                }
            });
            match prepared {
                Ok((id, meta)) => {
                    let body = messages::execute_body(&id, meta.as_deref(), version);
                    let (s, env) = c.request(Opcode::Execute, &body);
                    match c.send(&[env]).and_then(|_| c.wait(s)) {
                        Ok((h, b)) => results.push(rows_result(&h, &b)),
                        Err(e) => results.push(json!({"error": e})),
                    }
                }
                Err(e) => results.push(json!({"error": e})),
            }
        }
        "concurrent-select" => {
            let n = args.requests.max(1);
            let mut streams = Vec::new();
            let mut envs = Vec::new();
            for _ in 0..n {
                let (s, env) = c.request(Opcode::Query, &messages::query_body(select, version));
                streams.push(s);
                envs.push(env);
            }
            if let Err(e) = c.send(&envs) {
                return fail(results, e, negotiated);
            }
            for s in streams {
                match c.wait(s) {
                    Ok((h, b)) => results.push(rows_result(&h, &b)),
                    Err(e) => {
                        results.push(json!({"error": e}));
                        break;
                    }
                }
            }
        }
        "insert-large" => {
            let blob = database::blob_pattern(args.blob_size);
            let q = format!(
                "INSERT INTO ks.t (k, v) VALUES (1, 0x{})",
                hex::encode(&blob)
            );
            let (s, env) = c.request(Opcode::Query, &messages::query_body(&q, version));
            match c.send(&[env]).and_then(|_| c.wait(s)) {
                Ok((h, _)) if h.opcode == Opcode::Result as u8 => results.push(json!({"ok": true})),
                Ok((_, b)) => results.push(json!({"error": error_text(&b)})),
                Err(e) => results.push(json!({"error": e})),
            }
        }
        _ => unreachable!("checked above"),
    }
    Ok((results, negotiated))
}
