//! proem's integration and conformance tests: one module per file, built as
//! one test binary (the host and wasmtime linked once, not once per file).
//! Run one file's tests with `cargo test --release --test integration
//! <file>::`.

mod common;

mod architecture;
mod arithmetic;
mod authoring;
mod budget;
mod cache_boundary;
mod cache_entry;
mod cache_profiles;
mod caching;
mod cli;
mod compat_v0_1;
mod containment;
mod contributed;
mod determinism;
mod example_agent;
mod example_copy;
mod executables;
mod fuzz_corpus;
mod hardening;
mod hf_tokenizer;
mod host_work;
mod hostile;
mod input_rules;
mod oci;
mod operator;
mod plugin_api_v0_2;
mod plugin_dev;
mod plugins;
mod preset_layouts;
mod prompt_properties;
mod properties;
mod sections;
mod seed_parity;
mod serve;
mod serve_answers;
mod serve_hardening;
mod serve_replicas;
mod stable_diff;
mod stable_inputs;
mod tokenizer;
mod wit_package;
