//! kubectl-etcdnet's tools that are not tests (`cargo xtask <command>`, src/main.rs), and what
//! they share with the tests: krew-release-bot's rendering of krew/.krew.yaml, which
//! tests/it/krew_manifest.rs holds to plugin.yaml and the release renders with the real sums.

pub mod krew;
pub mod release;
