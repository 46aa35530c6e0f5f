//! Which end of a connection: the rules a receiver applies, and whom an error charges, depend
//! on it. A leaf, so that errors can name a side without depending on the connection.

/// Which end of the connection this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Role {
    /// The end that sends STARTUP and requests.
    Client,
    /// The end that answers them.
    Server,
}
