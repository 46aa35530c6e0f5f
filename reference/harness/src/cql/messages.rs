//! CQL messages on the wire, beyond the frame layer (native protocol v5 sections 3 and 4): the
//! QUERY, PREPARE and EXECUTE bodies a client sends, the RESULT bodies (Void, Rows, SetKeyspace,
//! Prepared) and SUPPORTED a server answers, and what each side reads back of them. Built on
//! the primitives of [`cqlframe::body`].

use cqlframe::body::{put_bytes, put_long_string, put_short_bytes, put_string, BodyError, Reader};
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
    pub fn write(&self, out: &mut Vec<u8>) {
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

/// The query string of a QUERY or PREPARE body (both start with a `[long string]`).
pub fn request_query(body: &[u8]) -> Result<String, String> {
    let query = Reader(body)
        .long_string_bytes()
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(query).into_owned())
}

/// The statement id of an EXECUTE body.
pub fn execute_id(body: &[u8]) -> Result<Vec<u8>, String> {
    let id = Reader(body).short_bytes().map_err(|e| e.to_string())?;
    Ok(id.to_vec())
}

/// Client side: the `(k, v)` rows of a RESULT body of kind Rows whose first two columns are an
/// int and a blob (the test table). Returns `None` for other result kinds.
pub type KvRows = Vec<(i32, Vec<u8>)>;

pub fn parse_kv_rows(body: &[u8]) -> Result<Option<KvRows>, String> {
    kv_rows(body).map_err(|e| e.to_string())
}

fn kv_rows(body: &[u8]) -> Result<Option<KvRows>, BodyError> {
    let mut r = Reader(body);
    if r.int()? != RESULT_ROWS {
        return Ok(None);
    }
    let columns = skip_rows_metadata(&mut r)?;
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
    let kind = r.int().map_err(|e| e.to_string())?;
    if kind != RESULT_PREPARED {
        return Err(format!("RESULT kind {kind}, expected Prepared"));
    }
    let id = r.short_bytes().map_err(|e| e.to_string())?.to_vec();
    let meta = if version >= 5 {
        Some(r.short_bytes().map_err(|e| e.to_string())?.to_vec())
    } else {
        None
    };
    Ok((id, meta))
}

/// The query parameters of QUERY and EXECUTE: consistency ONE, flags 0 (an `[int]` on v5+, a
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
        Ok(RESULT_SET_KEYSPACE) => format!(
            "SetKeyspace {}",
            String::from_utf8_lossy(r.short_bytes().unwrap_or_default())
        ),
        Ok(RESULT_PREPARED) => "Prepared".into(),
        Ok(5) => "SchemaChange".into(),
        Ok(k) => format!("kind {k}"),
        Err(_) => "malformed".into(),
    }
}

fn parse_rows_count(body: &[u8]) -> Option<i32> {
    let mut r = Reader(body);
    r.int().ok()?;
    skip_rows_metadata(&mut r).ok()?;
    r.int().ok()
}

/// Skips a Rows result's metadata (flags, column count, paging state, new metadata id,
/// table and column specs); returns the column count.
fn skip_rows_metadata(r: &mut Reader) -> Result<i32, BodyError> {
    let flags = r.int()?;
    let columns = r.int()?;
    if flags & 0x0002 != 0 {
        r.bytes()?;
    }
    if flags & 0x0008 != 0 {
        r.short_bytes()?;
    }
    if flags & 0x0004 == 0 {
        if flags & 0x0001 != 0 {
            r.short_bytes()?;
            r.short_bytes()?;
        }
        for _ in 0..columns {
            if flags & 0x0001 == 0 {
                r.short_bytes()?;
                r.short_bytes()?;
            }
            r.short_bytes()?;
            skip_option(r)?;
        }
    }
    Ok(columns)
}

/// Skips a type `[option]` (recursively for collections).
fn skip_option(r: &mut Reader) -> Result<(), BodyError> {
    match r.short()? {
        0x0000 => {
            r.short_bytes()?;
        }
        0x0020 | 0x0022 => skip_option(r)?,
        0x0021 => {
            skip_option(r)?;
            skip_option(r)?;
        }
        0x0030 => {
            r.short_bytes()?;
            r.short_bytes()?;
            let n = r.short()?;
            for _ in 0..n {
                r.short_bytes()?;
                skip_option(r)?;
            }
        }
        0x0031 => {
            let n = r.short()?;
            for _ in 0..n {
                skip_option(r)?;
            }
        }
        _ => {}
    }
    Ok(())
}
