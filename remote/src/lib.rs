//! Exploring a store where it lies: `exaviz serve` beside the data, answering Arrow Flight
//! requests ([`protocol`], [`server`]), and the client that opens `grpc://HOST:PORT/STORE` and
//! `ssh://HOST/PATH` as a dataset whose views draw the same pictures as from a local disk
//! ([`client`]). With the `sql` feature the same server answers any Flight client: ListFlights,
//! GetFlightInfo, GetSchema, DoGet of plain rows and Flight SQL (`sql`).

pub mod client;
pub mod protocol;
pub mod server;
#[cfg(feature = "sql")]
pub mod sql;
pub mod transport;

pub use client::{bytes_received, is_remote, open};

#[cfg(test)]
mod tests;
