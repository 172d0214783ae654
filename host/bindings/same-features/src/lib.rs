//! No code. See Cargo.toml: this crate only names features, so that building
//! one binding resolves the same dependency features as the workspace's test
//! build and reuses what it compiled.
