//! The build itself: what a prompt holds and in what order, the budget, the
//! cache boundary and the stable part, the caches, determinism, the presets,
//! the token counters, and the properties over generated agents.

mod budget;
mod cache_boundary;
mod cache_profiles;
mod caching;
mod contributed;
mod determinism;
mod example_agent;
mod hf_tokenizer;
mod preset_layouts;
mod prompt_properties;
mod properties;
mod sections;
mod seed_parity;
mod stable_diff;
mod stable_inputs;
mod tokenizer;
