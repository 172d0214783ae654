//! Hostile input and hostile plugins (docs/SECURITY.md): containment, host
//! work charged to the plugin, hostile workspaces, input rules, numbers at
//! every edge, the fuzz corpora, and `proem serve` against hostile clients.

mod arithmetic;
mod containment;
mod fuzz_corpus;
mod hardening;
mod host_work;
mod hostile;
mod input_rules;
mod serve_hardening;
