//! The CQL rows of the vectors' sessions: RESULT Rows of `ks.table (k text, v blob)`, written
//! with the one CQL codec ([`crate::cql::messages`]).

use crate::cql::messages::{self, Column, CqlType, Table};

pub use crate::cql::messages::query_body as query;

/// A RESULT Rows body for `ks.table (k text, v blob)` with `rows` rows of `value_len`-byte blobs.
/// The blob bytes repeat a short cycle, like real row data, so LZ4 has something to find.
pub fn rows(rows: usize, value_len: usize) -> Vec<u8> {
    let table = Table {
        keyspace: "ks".into(),
        table: "table".into(),
        columns: vec![
            Column {
                name: "k",
                ty: CqlType::Text,
            },
            Column {
                name: "v",
                ty: CqlType::Blob,
            },
        ],
        rows: (0..rows)
            .map(|r| {
                let key = format!("row-{r:06}").into_bytes();
                let value = (0..value_len)
                    .map(|i| ((i * 7 + r) % 61) as u8 + b'A')
                    .collect();
                vec![Some(key), Some(value)]
            })
            .collect(),
    };
    messages::rows_result(&table)
}

/// A `[bytes]` value.
pub fn bytes_value(v: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    cqlframe::body::put_bytes(&mut b, Some(v));
    b
}
