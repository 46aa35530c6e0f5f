//! Conformance adapter for the Rust driver cdrs-tokio (conformance/README.md, contract 1): runs
//! one case's workload through the driver's public API against the conformance server and
//! prints one JSON object on stdout. Exit 0: every request succeeded; 1: the driver raised an
//! error; 127: unsupported.
//!
//! cdrs-tokio does not negotiate the protocol version: it sends STARTUP in the version it is
//! configured with (V4 unless told), sends no OPTIONS first and never falls back. As the
//! contract says for such drivers, `--protocol default` asks for the highest version it
//! speaks, V5. It has no v6 (`--protocol 6`: 127) and no FRAME_CHECKSUM option. It has no
//! request timeout either: the adapter bounds each request with `tokio::time::timeout`.

use cdrs_tokio::authenticators::{NoneAuthenticatorProvider, StaticPasswordAuthenticatorProvider};
use cdrs_tokio::cluster::connection_pool::ConnectionPoolConfigBuilder;
use cdrs_tokio::cluster::session::{Session, SessionBuilder, TcpSessionBuilder};
use cdrs_tokio::cluster::{NodeTcpConfigBuilder, TcpConnectionManager};
use cdrs_tokio::compression::Compression;
use cdrs_tokio::frame::{Envelope, Version};
use cdrs_tokio::load_balancing::RoundRobinLoadBalancingStrategy;
use cdrs_tokio::retry::FallthroughRetryPolicy;
use cdrs_tokio::transport::TransportTcp;
use cdrs_tokio::types::blob::Blob;
use cdrs_tokio::types::prelude::Row;
use cdrs_tokio::types::IntoRustByIndex;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The driver release the adapter was built against, as setup.sh reads it from Cargo.lock (a
/// pinned build may use an older cdrs-tokio or cassandra-protocol than Cargo.toml names).
const DRIVER_VERSION: &str = match option_env!("CQLFRAME_CDRS_DRIVER_VERSION") {
    Some(version) => version,
    None => "cdrs-tokio (built without setup.sh: version unknown)",
};

type TcpSession = Session<
    TransportTcp,
    TcpConnectionManager,
    RoundRobinLoadBalancingStrategy<TransportTcp, TcpConnectionManager>,
>;

const ACTIONS: [&str; 6] = [
    "connect",
    "select",
    "prepare-select",
    "concurrent-select",
    "insert-large",
    "idle-select",
];
const SELECT: &str = "SELECT k, v FROM ks.t";

/// The contract's options: `--name value` pairs and the `--auth` switch.
struct Options(HashMap<String, String>);

impl Options {
    fn parse() -> Options {
        let mut map = HashMap::new();
        let mut args = std::env::args().skip(1).peekable();
        while let Some(arg) = args.next() {
            let Some(name) = arg.strip_prefix("--") else {
                continue;
            };
            let value = match args.peek() {
                Some(v) if !v.starts_with("--") => args.next().unwrap_or_default(),
                _ => "true".to_string(),
            };
            map.insert(name.to_string(), value);
        }
        Options(map)
    }

    fn get(&self, name: &str, default: &str) -> String {
        self.0.get(name).cloned().unwrap_or_else(|| default.into())
    }

    fn number(&self, name: &str) -> usize {
        self.get(name, "0").parse().unwrap_or(0)
    }
}

/// The rows of a RESULT as the contract reports them: count and SHA-256 digest.
fn rows_entry(envelope: Envelope) -> Value {
    let rows = match envelope.response_body().map(|b| b.into_rows()) {
        Ok(Some(rows)) => rows,
        Ok(None) => return json!({"error": "the response has no rows"}),
        Err(e) => return json!({"error": format!("{e}")}),
    };
    let mut digest = Sha256::new();
    for row in &rows {
        let k: i32 = match row.get_r_by_index(0) {
            Ok(k) => k,
            Err(e) => return json!({"error": format!("column k: {e}")}),
        };
        digest.update(k.to_be_bytes());
        match value(row) {
            Ok(Some(v)) => {
                digest.update((v.len() as u32).to_be_bytes());
                digest.update(&v);
            }
            // A null is digested as on the wire: length -1, no bytes.
            Ok(None) => digest.update((-1i32).to_be_bytes()),
            Err(e) => return json!({"error": format!("column v: {e}")}),
        }
    }
    json!({"rows": rows.len(), "digest": hex(&digest.finalize())})
}

fn value(row: &Row) -> Result<Option<Vec<u8>>, String> {
    let v: Option<Blob> = row.get_by_index(1).map_err(|e| format!("{e}"))?;
    Ok(v.map(Blob::into_vec))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A request bounded by the contract's `--timeout` (the driver has no request timeout).
async fn bounded<F: Future<Output = cdrs_tokio::Result<Envelope>>>(
    limit: Duration,
    request: F,
) -> Result<Envelope, String> {
    match tokio::time::timeout(limit, request).await {
        Ok(Ok(envelope)) => Ok(envelope),
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err(format!("client timeout after {} s", limit.as_secs_f64())),
    }
}

async fn select(session: &TcpSession, limit: Duration) -> Value {
    match bounded(limit, session.query(SELECT)).await {
        Ok(envelope) => rows_entry(envelope),
        Err(e) => json!({ "error": e }),
    }
}

async fn connect(o: &Options, version: Version, limit: Duration) -> Result<TcpSession, String> {
    let address = format!("{}:{}", o.get("host", "127.0.0.1"), o.get("port", "9042"));
    let config = NodeTcpConfigBuilder::new()
        .with_contact_point(address.into())
        .with_version(version);
    let config = if o.0.contains_key("auth") {
        config.with_authenticator_provider(Arc::new(StaticPasswordAuthenticatorProvider::new(
            "cassandra",
            "cassandra",
        )))
    } else {
        config.with_authenticator_provider(Arc::new(NoneAuthenticatorProvider))
    };
    let config = config.build().await.map_err(|e| format!("{e}"))?;
    let compression = match o.get("compression", "default").as_str() {
        "lz4" => Compression::Lz4,
        _ => Compression::None, // the driver's default
    };
    let heartbeat = if o.get("action", "") == "idle-select" {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(30) // the driver's default
    };
    let pool = ConnectionPoolConfigBuilder::new()
        .with_connect_timeout(Some(limit))
        .with_heartbeat_interval(heartbeat)
        .build();
    let build = TcpSessionBuilder::new(RoundRobinLoadBalancingStrategy::new(), config)
        .with_compression(compression)
        .with_retry_policy(Box::new(FallthroughRetryPolicy))
        .with_connection_pool_config(pool)
        .build();
    match tokio::time::timeout(limit, build).await {
        Ok(Ok(session)) => Ok(session),
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err(format!("connect timeout after {} s", limit.as_secs_f64())),
    }
}

/// Runs the action; its result entries, or the error that stopped it.
async fn workload(o: &Options, session: &Arc<TcpSession>, limit: Duration) -> Vec<Value> {
    match o.get("action", "").as_str() {
        "connect" => vec![match bounded(
            limit,
            session.query("SELECT release_version FROM system.local"),
        )
        .await
        {
            Ok(_) => json!({"ok": true}),
            Err(e) => json!({ "error": e }),
        }],
        "select" => vec![select(session, limit).await],
        "prepare-select" => vec![match bounded_prepare(session, limit).await {
            Ok(envelope) => rows_entry(envelope),
            Err(e) => json!({ "error": e }),
        }],
        "concurrent-select" => {
            // Every request in flight at once; results in order.
            let handles: Vec<_> = (0..o.number("requests").max(1))
                .map(|_| {
                    let session = Arc::clone(session);
                    tokio::spawn(async move { select(&session, limit).await })
                })
                .collect();
            let mut results = Vec::with_capacity(handles.len());
            for handle in handles {
                results.push(
                    handle
                        .await
                        .unwrap_or_else(|e| json!({"error": format!("{e}")})),
                );
            }
            results
        }
        "insert-large" => {
            // The blob inlined as a literal, as the contract asks (the server checks it).
            let blob: Vec<u8> = (0..o.number("blob-size"))
                .map(|i| ((7 * i + 3) % 256) as u8)
                .collect();
            let query = format!("INSERT INTO ks.t (k, v) VALUES (1, 0x{})", hex(&blob));
            vec![match bounded(limit, session.query(query)).await {
                Ok(_) => json!({"ok": true}),
                Err(e) => json!({ "error": e }),
            }]
        }
        _ => {
            // idle-select: the pool (whose connections carry the heartbeats) opens on the
            // first query, so open it first, as the contract says; then stay idle.
            if let Err(e) = bounded(limit, session.query("SELECT key FROM system.local")).await {
                return vec![json!({ "error": e })];
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
            vec![select(session, limit).await]
        }
    }
}

async fn bounded_prepare(session: &TcpSession, limit: Duration) -> Result<Envelope, String> {
    let prepared = match tokio::time::timeout(limit, session.prepare(SELECT)).await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return Err(format!("{e}")),
        Err(_) => return Err(format!("client timeout after {} s", limit.as_secs_f64())),
    };
    bounded(limit, session.exec(&prepared)).await
}

#[tokio::main]
async fn main() {
    let o = Options::parse();
    let mut report = json!({
        "contract": 1,
        "driver": "cdrs",
        "driver_version": DRIVER_VERSION,
        "case": o.get("case", ""),
        "action": o.get("action", ""),
    });
    let action = o.get("action", "");
    let version = match o.get("protocol", "default").as_str() {
        "4" => Some(Version::V4),
        "5" | "default" => Some(Version::V5),
        _ => None,
    };
    let unsupported = if !ACTIONS.contains(&action.as_str()) {
        Some(format!("unknown action {action:?}"))
    } else if version.is_none() {
        Some("cdrs-tokio speaks protocol v4 and v5 only (no v6)".to_string())
    } else {
        None
    };
    if let Some(why) = unsupported {
        report["unsupported"] = json!(why);
        println!("{report}");
        std::process::exit(127);
    }
    let limit = Duration::from_secs_f64(o.get("timeout", "10").parse().unwrap_or(10.0));
    let (results, error) = match connect(&o, version.unwrap_or(Version::V5), limit).await {
        Ok(session) => (workload(&o, &Arc::new(session), limit).await, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let failed = error.is_some() || results.iter().any(|r| r.get("error").is_some());
    report["results"] = Value::Array(results);
    report["error"] = json!(error);
    println!("{report}");
    // The session's background tasks (control connection, pools) end with the process.
    std::process::exit(i32::from(failed));
}
