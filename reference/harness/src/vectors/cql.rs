//! Just enough CQL message bodies to make realistic sessions: QUERY and RESULT Rows with text
//! and blob columns (native protocol v5 sections 4.1.4 and 4.2.5.2).

/// A QUERY body: the statement, consistency ONE, no flags (v5 flags are an [int]).
pub fn query(statement: &str, version: u8) -> Vec<u8> {
    let mut b = (statement.len() as i32).to_be_bytes().to_vec();
    b.extend_from_slice(statement.as_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    if version >= 5 {
        b.extend_from_slice(&0i32.to_be_bytes());
    } else {
        b.push(0);
    }
    b
}

/// A RESULT Rows body for `ks.table (k text, v blob)` with `rows` rows of `value_len`-byte blobs.
/// The blob bytes repeat a short cycle, like real row data, so LZ4 has something to find.
pub fn rows(rows: usize, value_len: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + rows * (value_len + 24));
    b.extend_from_slice(&2i32.to_be_bytes()); // kind: Rows
    b.extend_from_slice(&1i32.to_be_bytes()); // flags: global table spec
    b.extend_from_slice(&2i32.to_be_bytes()); // columns
    for s in ["ks", "table"] {
        string(&mut b, s);
    }
    for (name, type_id) in [("k", 0x000Du16), ("v", 0x0003)] {
        string(&mut b, name);
        b.extend_from_slice(&type_id.to_be_bytes());
    }
    b.extend_from_slice(&(rows as i32).to_be_bytes());
    for r in 0..rows {
        let key = format!("row-{r:06}");
        bytes(&mut b, key.as_bytes());
        let value: Vec<u8> = (0..value_len)
            .map(|i| ((i * 7 + r) % 61) as u8 + b'A')
            .collect();
        bytes(&mut b, &value);
    }
    b
}

fn string(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u16).to_be_bytes());
    b.extend_from_slice(s.as_bytes());
}

/// A [bytes] value.
pub fn bytes_value(v: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    bytes(&mut b, v);
    b
}

fn bytes(b: &mut Vec<u8>, v: &[u8]) {
    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
    b.extend_from_slice(v);
}
