//! Running a generated parser over bytes, and naming what the runtime raised in the terms of
//! kaitai_struct_tests' .kst files (EndOfStreamError, Validation*Error), as every runner does.

use std::any::Any;
use std::fmt;

use kaitai::{BytesReader, KError, KStruct, OptRc, SharedType, ValidationKind};

/// The stage of the receiver at which a generated parser ran (vector_negatives.yaml `stage`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The stream type over the whole input.
    Frames,
    /// `cql_envelopes` over the decompressed content of an LZ4 frame.
    Content,
    /// `cql_envelope` (or its header) over a reassembled sequence.
    Sequence,
    /// A kst case's type over its data.
    Kst,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Frames => "frames",
            Stage::Content => "content",
            Stage::Sequence => "sequence",
            Stage::Kst => "kst",
        }
    }
}

/// The kst name of a runtime error, or None when it is not one of the errors a .kst names
/// (then it is a failure of the runner, not an outcome of the grammar).
pub fn kst_name(error: &KError) -> Option<&'static str> {
    match error {
        KError::Eof { .. } => Some("EndOfStreamError"),
        KError::ValidationFailed(v) => match v.kind {
            ValidationKind::NotEqual => Some("ValidationNotEqualError"),
            ValidationKind::LessThan => Some("ValidationLessThanError"),
            ValidationKind::GreaterThan => Some("ValidationGreaterThanError"),
            ValidationKind::NotAnyOf => Some("ValidationNotAnyOfError"),
            ValidationKind::NotInEnum => Some("ValidationNotInEnumError"),
            ValidationKind::Expr => Some("ValidationExprError"),
            _ => None,
        },
        _ => None,
    }
}

/// How a parse stage failed.
#[derive(Debug)]
pub enum ParseFailure {
    /// The runtime raised an error a .kst names: an outcome of the grammar.
    Grammar {
        stage: Stage,
        name: &'static str,
        error: KError,
    },
    /// Any other runtime error: the runner cannot go on.
    Runtime { stage: Stage, error: KError },
}

impl ParseFailure {
    pub fn new(stage: Stage, error: KError) -> Self {
        match kst_name(&error) {
            Some(name) => ParseFailure::Grammar { stage, name, error },
            None => ParseFailure::Runtime { stage, error },
        }
    }
}

impl fmt::Display for ParseFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseFailure::Grammar { stage, name, error } => {
                write!(f, "{}: {name} ({error:?})", stage.name())
            }
            ParseFailure::Runtime { stage, error } => {
                write!(f, "{}: runtime error {error:?}", stage.name())
            }
        }
    }
}

/// Parses `data` as the top-level type T (its own root and parent).
pub fn parse<T: KStruct + Any>(stage: Stage, data: &[u8]) -> Result<OptRc<T>, ParseFailure> {
    T::read_into::<BytesReader, T>(&BytesReader::from(data), None, None)
        .map_err(|e| ParseFailure::new(stage, e))
}

/// Parses `data` as a nested type T on its own (`cql_envelope::header`). The Rust target
/// unwraps the root in every `read`, so a nested type cannot be read without one: `root` is
/// an empty object of the root type, kept alive by the caller while T is used.
pub fn parse_nested<T, R>(
    stage: Stage,
    data: &[u8],
    root: &OptRc<R>,
) -> Result<OptRc<T>, ParseFailure>
where
    T: KStruct<Root = R, Parent = R> + Any,
    R: KStruct,
{
    let shared = || Some(SharedType::new(root.get()));
    T::read_into::<BytesReader, T>(&BytesReader::from(data), shared(), shared())
        .map_err(|e| ParseFailure::new(stage, e))
}
