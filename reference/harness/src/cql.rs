//! The CQL the conformance server and the reference client speak, beyond the frame layer:
//! request parsing, RESULT bodies (Void, Rows, SetKeyspace, Prepared) and the primed tables.
//!
//! Encodings follow `native_protocol_v5.spec` (sections 3 and 4.2.5). Only what a driver needs
//! to connect with default settings and run the conformance workloads is here:
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

use cqlframe::connection::ServerOptions;
use sha2::{Digest, Sha256};

pub const RESULT_VOID: i32 = 1;
pub const RESULT_ROWS: i32 = 2;
pub const RESULT_SET_KEYSPACE: i32 = 3;
pub const RESULT_PREPARED: i32 = 4;

/// CQL type option ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqlType {
    Blob,
    Int,
    Text,
    Uuid,
    Inet,
    SetOfText,
}

impl CqlType {
    fn write(&self, out: &mut Vec<u8>) {
        let id: u16 = match self {
            CqlType::Blob => 0x0003,
            CqlType::Int => 0x0009,
            CqlType::Text => 0x000D,
            CqlType::Uuid => 0x000C,
            CqlType::Inet => 0x0010,
            CqlType::SetOfText => 0x0022,
        };
        out.extend_from_slice(&id.to_be_bytes());
        if *self == CqlType::SetOfText {
            out.extend_from_slice(&0x000Du16.to_be_bytes());
        }
    }
}

/// A column of a result: name and type.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: &'static str,
    pub ty: CqlType,
}

/// A table's columns and rows, each cell already serialised (`None` is null).
#[derive(Clone, Debug)]
pub struct Table {
    pub keyspace: String,
    pub table: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Option<Vec<u8>>>>,
}

/// Columns from `(name, type)` pairs.
fn columns(spec: &[(&'static str, CqlType)]) -> Vec<Column> {
    spec.iter().map(|&(name, ty)| Column { name, ty }).collect()
}

// ---- primitive writers -------------------------------------------------------------------

pub fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub fn put_long_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as i32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub fn put_short_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u16).to_be_bytes());
    out.extend_from_slice(b);
}

fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(b) => {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
    }
}

// ---- primitive reader ----------------------------------------------------------------------

/// Reads CQL primitives front to back; every read fails cleanly on a short body.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!(
                "body ends inside a value ({} of {n} bytes)",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub fn short(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub fn int(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn string(&mut self) -> Result<String, String> {
        let n = self.short()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    pub fn long_string(&mut self) -> Result<String, String> {
        let n = self.int()?;
        let n = usize::try_from(n).map_err(|_| "negative long string length".to_string())?;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    pub fn short_bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.short()? as usize;
        self.take(n)
    }
    pub fn bytes(&mut self) -> Result<Option<&'a [u8]>, String> {
        let n = self.int()?;
        if n < 0 {
            return Ok(None);
        }
        self.take(n as usize).map(Some)
    }
    /// Skips a Rows result's metadata (flags, column count, paging state, new metadata id,
    /// table and column specs); returns the column count.
    pub fn rows_metadata(&mut self) -> Result<i32, String> {
        let flags = self.int()?;
        let columns = self.int()?;
        if flags & 0x0002 != 0 {
            self.bytes()?;
        }
        if flags & 0x0008 != 0 {
            self.short_bytes()?;
        }
        if flags & 0x0004 == 0 {
            if flags & 0x0001 != 0 {
                self.string()?;
                self.string()?;
            }
            for _ in 0..columns {
                if flags & 0x0001 == 0 {
                    self.string()?;
                    self.string()?;
                }
                self.string()?;
                self.skip_option()?;
            }
        }
        Ok(columns)
    }

    /// Skips a type `[option]` (recursively for collections).
    pub fn skip_option(&mut self) -> Result<(), String> {
        match self.short()? {
            0x0000 => {
                self.string()?;
            }
            0x0020 | 0x0022 => self.skip_option()?,
            0x0021 => {
                self.skip_option()?;
                self.skip_option()?;
            }
            0x0030 => {
                self.string()?;
                self.string()?;
                let n = self.short()?;
                for _ in 0..n {
                    self.string()?;
                    self.skip_option()?;
                }
            }
            0x0031 => {
                let n = self.short()?;
                for _ in 0..n {
                    self.skip_option()?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

// ---- RESULT bodies -------------------------------------------------------------------------

/// Rows metadata: global table spec, column specs.
fn write_metadata(out: &mut Vec<u8>, table: &Table) {
    let global = 0x0001i32;
    out.extend_from_slice(&global.to_be_bytes());
    out.extend_from_slice(&(table.columns.len() as i32).to_be_bytes());
    put_string(out, &table.keyspace);
    put_string(out, &table.table);
    for c in &table.columns {
        put_string(out, c.name);
        c.ty.write(out);
    }
}

pub fn void_result() -> Vec<u8> {
    RESULT_VOID.to_be_bytes().to_vec()
}

pub fn rows_result(table: &Table) -> Vec<u8> {
    let mut out = RESULT_ROWS.to_be_bytes().to_vec();
    write_metadata(&mut out, table);
    out.extend_from_slice(&(table.rows.len() as i32).to_be_bytes());
    for row in &table.rows {
        for cell in row {
            put_bytes(&mut out, cell.as_deref());
        }
    }
    out
}

pub fn set_keyspace_result(keyspace: &str) -> Vec<u8> {
    let mut out = RESULT_SET_KEYSPACE.to_be_bytes().to_vec();
    put_string(&mut out, keyspace);
    out
}

/// A Prepared result for a statement without bind markers; `version` decides whether the
/// result metadata id is present (v5 and later).
pub fn prepared_result(id: &[u8], version: u8, table: &Table) -> Vec<u8> {
    let mut out = RESULT_PREPARED.to_be_bytes().to_vec();
    put_short_bytes(&mut out, id);
    if version >= 5 {
        put_short_bytes(&mut out, &metadata_id(table));
    }
    // Bind variables: none (flags, count 0, pk count 0 on v4+).
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    if version >= 4 {
        out.extend_from_slice(&0i32.to_be_bytes());
    }
    write_metadata(&mut out, table);
    out
}

/// A stable id for a result metadata.
pub fn metadata_id(table: &Table) -> Vec<u8> {
    let mut h = Sha256::new();
    for c in &table.columns {
        h.update(c.name.as_bytes());
    }
    h.finalize()[..16].to_vec()
}

pub fn statement_id(query: &str) -> Vec<u8> {
    Sha256::digest(query.as_bytes())[..16].to_vec()
}

/// SUPPORTED body: what the conformance server offers.
pub fn supported_body(options: &ServerOptions, max_version: u8) -> Vec<u8> {
    let versions = ["3/v3", "4/v4", "5/v5", "6/v6-beta"];
    let mut entries: Vec<(&str, Vec<&str>)> = vec![
        ("CQL_VERSION", vec!["3.4.7"]),
        (
            "COMPRESSION",
            if options.lz4 { vec!["lz4"] } else { vec![] },
        ),
        (
            "PROTOCOL_VERSIONS",
            versions[..usize::from(max_version.clamp(3, 6) - 2)].to_vec(),
        ),
    ];
    if let Some(c) = &options.checksums {
        entries.push(("FRAME_CHECKSUMS", c.iter().map(|c| c.name()).collect()));
    }
    cqlframe::body::string_multimap(&entries)
}

// ---- requests ------------------------------------------------------------------------------

/// The query string of a QUERY or PREPARE body (both start with a [long string]).
pub fn request_query(body: &[u8]) -> Result<String, String> {
    Reader(body).long_string()
}

/// The statement id of an EXECUTE body.
pub fn execute_id(body: &[u8]) -> Result<Vec<u8>, String> {
    Ok(Reader(body).short_bytes()?.to_vec())
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

// ---- the primed data -----------------------------------------------------------------------

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

/// Client side: the `(k, v)` rows of a RESULT body of kind Rows whose first two columns are an
/// int and a blob (the test table). Returns `None` for other result kinds.
pub type KvRows = Vec<(i32, Vec<u8>)>;

pub fn parse_kv_rows(body: &[u8]) -> Result<Option<KvRows>, String> {
    let mut r = Reader(body);
    if r.int()? != RESULT_ROWS {
        return Ok(None);
    }
    let columns = r.rows_metadata()?;
    let count = r.int()?;
    let mut rows = Vec::new();
    for _ in 0..count {
        let mut k = 0;
        let mut v = Vec::new();
        for c in 0..columns {
            let cell = r.bytes()?;
            match (c, cell) {
                (0, Some(b)) if b.len() == 4 => k = i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                (1, Some(b)) => v = b.to_vec(),
                _ => {}
            }
        }
        rows.push((k, v));
    }
    Ok(Some(rows))
}

/// Client side: the id and result metadata id of a Prepared RESULT body.
pub fn parse_prepared(body: &[u8], version: u8) -> Result<(Vec<u8>, Option<Vec<u8>>), String> {
    let mut r = Reader(body);
    let kind = r.int()?;
    if kind != RESULT_PREPARED {
        return Err(format!("RESULT kind {kind}, expected Prepared"));
    }
    let id = r.short_bytes()?.to_vec();
    let meta = if version >= 5 {
        Some(r.short_bytes()?.to_vec())
    } else {
        None
    };
    Ok((id, meta))
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

// ---- client request bodies -----------------------------------------------------------------

/// The query parameters of QUERY and EXECUTE: consistency ONE, flags 0 (an [int] on v5+, a
/// [byte] before), so no values.
fn put_query_parameters(out: &mut Vec<u8>, version: u8) {
    out.extend_from_slice(&1u16.to_be_bytes());
    if version >= 5 {
        out.extend_from_slice(&0i32.to_be_bytes());
    } else {
        out.push(0);
    }
}

/// QUERY body: the query, no values.
pub fn query_body(query: &str, version: u8) -> Vec<u8> {
    let mut out = Vec::new();
    put_long_string(&mut out, query);
    put_query_parameters(&mut out, version);
    out
}

/// PREPARE body.
pub fn prepare_body(query: &str, version: u8) -> Vec<u8> {
    let mut out = Vec::new();
    put_long_string(&mut out, query);
    if version >= 5 {
        out.extend_from_slice(&0i32.to_be_bytes());
    }
    out
}

/// EXECUTE body with no values.
pub fn execute_body(id: &[u8], metadata_id: Option<&[u8]>, version: u8) -> Vec<u8> {
    let mut out = Vec::new();
    put_short_bytes(&mut out, id);
    if let Some(m) = metadata_id {
        put_short_bytes(&mut out, m);
    }
    put_query_parameters(&mut out, version);
    out
}

/// A short human summary of a RESULT body for wire logs.
pub fn describe_result(body: &[u8]) -> String {
    let mut r = Reader(body);
    match r.int() {
        Ok(RESULT_VOID) => "Void".into(),
        Ok(RESULT_ROWS) => match parse_rows_count(body) {
            Some(n) => format!("Rows ({n} rows)"),
            None => "Rows".into(),
        },
        Ok(RESULT_SET_KEYSPACE) => format!("SetKeyspace {}", r.string().unwrap_or_default()),
        Ok(RESULT_PREPARED) => "Prepared".into(),
        Ok(5) => "SchemaChange".into(),
        Ok(k) => format!("kind {k}"),
        Err(_) => "malformed".into(),
    }
}

fn parse_rows_count(body: &[u8]) -> Option<i32> {
    let mut r = Reader(body);
    r.int().ok()?;
    r.rows_metadata().ok()?;
    r.int().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
