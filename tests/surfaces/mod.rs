//! What users and programs call: the CLI and its two executables, what an
//! operator sees, `proem serve` over HTTP (answers, replicas), and the
//! crates' shape.

mod architecture;
mod cli;
mod executables;
mod operator;
pub(crate) mod serve;
mod serve_answers;
mod serve_replicas;
