//! The conformance server's canned database: what a driver needs to connect with default
//! settings and run the conformance workloads, and nothing more:
//!
//! | query (case-insensitive, first match) | answer |
//! |---|---|
//! | `... FROM system.local ...` | one row: the node (`LOCAL_COLUMNS`) |
//! | `... FROM system.peers ...`, `system.peers_v2` | no rows |
//! | `... FROM system_schema.*`, `system_virtual_schema.*`, any other `SELECT` | no rows (one text column) |
//! | `... FROM ks.t` (or `t` after `USE ks`) | the case's rows: `k int`, `v blob` |
//! | `USE x` | SetKeyspace `x` |
//! | `INSERT INTO ks.t ... 0x<hex> ...` | Void; the blob is checked against [`blob_pattern`] |
//! | anything else (DDL, other DML) | Void |

use super::messages::{Column, CqlType, Table};
use cqlframe::body::put_bytes;
use sha2::{Digest, Sha256};

/// Columns from `(name, type)` pairs.
fn columns(spec: &[(&'static str, CqlType)]) -> Vec<Column> {
    spec.iter().map(|&(name, ty)| Column { name, ty }).collect()
}

/// What a query asks for, by the table above.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Local,
    Peers,
    EmptyRows,
    TestTable,
    Use(String),
    Insert,
    Void,
}

pub fn route(query: &str, keyspace: Option<&str>) -> Route {
    let q = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = q.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("use ") {
        let ks = rest
            .trim()
            .trim_matches(|c| c == '"' || c == ';')
            .to_string();
        return Route::Use(ks);
    }
    if lower.starts_with("insert into ks.t") || lower.starts_with("insert into t ") {
        return Route::Insert;
    }
    if !lower.starts_with("select") {
        return Route::Void;
    }
    let from = lower
        .split(" from ")
        .nth(1)
        .and_then(|s| s.split([' ', ';']).next())
        .unwrap_or("")
        .replace('"', "");
    match from.as_str() {
        "system.local" => Route::Local,
        "system.peers" | "system.peers_v2" => Route::Peers,
        "ks.t" => Route::TestTable,
        "t" if keyspace == Some("ks") => Route::TestTable,
        _ => Route::EmptyRows,
    }
}

pub fn statement_id(query: &str) -> Vec<u8> {
    Sha256::digest(query.as_bytes())[..16].to_vec()
}

pub const HOST_ID: [u8; 16] = [
    0x2f, 0x6b, 0x4c, 0x1e, 0x8a, 0x77, 0x4d, 0x3b, 0x9c, 0x21, 0x55, 0x0e, 0x6a, 0x10, 0x42, 0x01,
];

pub const SCHEMA_VERSION: [u8; 16] = [
    0x7a, 0x1c, 0x3e, 0x55, 0x0b, 0x2d, 0x4f, 0x61, 0x83, 0x95, 0xa7, 0xb9, 0xcb, 0xdd, 0xef, 0x01,
];

fn text(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

fn int(v: i32) -> Option<Vec<u8>> {
    Some(v.to_be_bytes().to_vec())
}

fn set_of_text(items: &[&str]) -> Option<Vec<u8>> {
    let mut out = (items.len() as i32).to_be_bytes().to_vec();
    for i in items {
        put_bytes(&mut out, Some(i.as_bytes()));
    }
    Some(out)
}

/// `system.local`: the columns the Python and Java drivers read (key, bootstrapped, addresses
/// and ports, cluster_name, cql_version, data_center, rack, host_id, partitioner,
/// release_version 4.0.11 so that drivers pick their Cassandra 4 schema parser, schema_version,
/// tokens).
pub fn system_local(port: u16) -> Table {
    use CqlType::*;
    let columns = columns(&[
        ("key", Text),
        ("bootstrapped", Text),
        ("broadcast_address", Inet),
        ("broadcast_port", Int),
        ("cluster_name", Text),
        ("cql_version", Text),
        ("data_center", Text),
        ("host_id", Uuid),
        ("listen_address", Inet),
        ("listen_port", Int),
        ("native_protocol_version", Text),
        ("partitioner", Text),
        ("rack", Text),
        ("release_version", Text),
        ("rpc_address", Inet),
        ("rpc_port", Int),
        ("schema_version", Uuid),
        ("tokens", SetOfText),
    ]);
    let lo = Some(vec![127, 0, 0, 1]);
    let row = vec![
        text("local"),
        text("COMPLETED"),
        lo.clone(),
        int(7000),
        text("cqlframe-conformance"),
        text("3.4.7"),
        text("dc1"),
        Some(HOST_ID.to_vec()),
        lo.clone(),
        int(7000),
        text("5"),
        text("org.apache.cassandra.dht.Murmur3Partitioner"),
        text("rack1"),
        text("4.0.11"),
        lo,
        int(i32::from(port)),
        Some(SCHEMA_VERSION.to_vec()),
        set_of_text(&["0"]),
    ];
    Table {
        keyspace: "system".into(),
        table: "local".into(),
        columns,
        rows: vec![row],
    }
}

/// The columns a `SELECT a, b FROM ...` names, in order, lower-cased and unquoted; `None` for
/// `SELECT *` (or a select list this parser does not understand).
pub fn selected_columns(query: &str) -> Option<Vec<String>> {
    let q = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = q.to_ascii_lowercase();
    let list = lower
        .strip_prefix("select ")?
        .split(" from ")
        .next()?
        .trim();
    if list == "*" || list.contains('(') {
        return None;
    }
    let names: Vec<String> = list
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    if names.iter().any(|n| n.is_empty() || n.contains(' ')) {
        return None;
    }
    Some(names)
}

/// `table` with only the columns `query` selects (as a server answers `SELECT schema_version
/// FROM system.local`: gocql scans such results positionally). Unknown names are left out.
pub fn project(table: Table, query: &str) -> Table {
    let Some(names) = selected_columns(query) else {
        return table;
    };
    let picks: Vec<usize> = names
        .iter()
        .filter_map(|n| table.columns.iter().position(|c| c.name == n))
        .collect();
    if picks.is_empty() {
        return table;
    }
    Table {
        columns: picks.iter().map(|&i| table.columns[i].clone()).collect(),
        rows: table
            .rows
            .iter()
            .map(|r| picks.iter().map(|&i| r[i].clone()).collect())
            .collect(),
        ..table
    }
}

/// `system.peers` / `system.peers_v2`: no rows (a one-node cluster).
pub fn system_peers(name: &str) -> Table {
    use CqlType::*;
    Table {
        keyspace: "system".into(),
        table: name.into(),
        columns: columns(&[
            ("peer", Inet),
            ("data_center", Text),
            ("host_id", Uuid),
            ("rack", Text),
            ("release_version", Text),
            ("rpc_address", Inet),
            ("schema_version", Uuid),
            ("tokens", SetOfText),
        ]),
        rows: vec![],
    }
}

/// An empty result (schema tables and unknown SELECTs): no rows, one text column
/// `keyspace_name` (the Python driver's row parser fails on a result with no columns).
pub fn empty_table(keyspace: &str, table: &str) -> Table {
    Table {
        keyspace: keyspace.into(),
        table: table.into(),
        columns: columns(&[("keyspace_name", CqlType::Text)]),
        rows: vec![],
    }
}

/// The value of `v` in row `k` of the test table: `row_size` bytes, byte i = (31k + 7i + 1) mod 256.
pub fn row_value(k: i32, row_size: usize) -> Vec<u8> {
    (0..row_size)
        .map(|i| (k as usize).wrapping_mul(31).wrapping_add(i * 7 + 1) as u8)
        .collect()
}

/// The blob an `insert-large` workload writes: byte i = (7i + 3) mod 256.
pub fn blob_pattern(size: usize) -> Vec<u8> {
    (0..size).map(|i| (i * 7 + 3) as u8).collect()
}

/// The test table `ks.t (k int, v blob)` with `rows` rows of `row_size`-byte values.
pub fn test_table(rows: usize, row_size: usize) -> Table {
    Table {
        keyspace: "ks".into(),
        table: "t".into(),
        columns: columns(&[("k", CqlType::Int), ("v", CqlType::Blob)]),
        rows: (0..rows as i32)
            .map(|k| vec![int(k), Some(row_value(k, row_size))])
            .collect(),
    }
}

/// The digest adapters report for rows of `(k, v)`: SHA-256 over, for each row in order, k as a
/// 4-byte big-endian integer, the length of v as a 4-byte big-endian integer, then v.
pub fn rows_digest<'a>(rows: impl IntoIterator<Item = (i32, &'a [u8])>) -> String {
    let mut h = Sha256::new();
    for (k, v) in rows {
        h.update(k.to_be_bytes());
        h.update((v.len() as u32).to_be_bytes());
        h.update(v);
    }
    hex::encode(h.finalize())
}

/// Digest of the test table's true rows.
pub fn expected_digest(rows: usize, row_size: usize) -> String {
    let values: Vec<(i32, Vec<u8>)> = (0..rows as i32)
        .map(|k| (k, row_value(k, row_size)))
        .collect();
    rows_digest(values.iter().map(|(k, v)| (*k, v.as_slice())))
}

/// The hex of the first `0x...` literal in a query, decoded.
pub fn first_blob_literal(query: &str) -> Option<Vec<u8>> {
    let start = query.find("0x")? + 2;
    let hex: String = query[start..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    hex::decode(hex).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cql::messages::{describe_result, parse_kv_rows, rows_result};

    #[test]
    fn rows_round_trip_and_digest() {
        let t = test_table(3, 10);
        let rows = parse_kv_rows(&rows_result(&t)).unwrap().unwrap();
        assert_eq!(rows.len(), 3);
        let d = rows_digest(rows.iter().map(|(k, v)| (*k, v.as_slice())));
        assert_eq!(d, expected_digest(3, 10));
        assert_eq!(describe_result(&rows_result(&t)), "Rows (3 rows)");
    }

    #[test]
    fn routes() {
        assert_eq!(
            route("SELECT * FROM system.local WHERE key='local'", None),
            Route::Local
        );
        assert_eq!(route("SELECT * FROM system.peers_v2", None), Route::Peers);
        assert_eq!(route("select k, v from ks.t", None), Route::TestTable);
        assert_eq!(route("SELECT k, v FROM t", Some("ks")), Route::TestTable);
        assert_eq!(route("USE ks", None), Route::Use("ks".into()));
        assert_eq!(
            route("SELECT * FROM system_schema.tables", None),
            Route::EmptyRows
        );
        assert_eq!(route("CREATE TABLE x (a int)", None), Route::Void);
        assert_eq!(
            first_blob_literal("INSERT INTO ks.t (k, v) VALUES (1, 0x0a0b)"),
            Some(vec![10, 11])
        );
    }

    #[test]
    fn projection() {
        let t = project(
            system_local(9042),
            "SELECT schema_version FROM system.local WHERE key='local'",
        );
        assert_eq!(t.columns.len(), 1);
        assert_eq!(t.columns[0].name, "schema_version");
        assert_eq!(t.rows, vec![vec![Some(SCHEMA_VERSION.to_vec())]]);
        let t = project(
            system_local(9042),
            "select \"rack\", data_center from system.local",
        );
        assert_eq!(
            t.columns.iter().map(|c| c.name).collect::<Vec<_>>(),
            ["rack", "data_center"]
        );
        assert_eq!(t.rows[0], vec![text("rack1"), text("dc1")]);
        assert_eq!(
            project(system_local(1), "SELECT * FROM system.local")
                .columns
                .len(),
            18
        );
        assert_eq!(selected_columns("SELECT count(*) FROM system.local"), None);
    }
}
