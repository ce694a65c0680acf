//! `--watch` refuses `--dry-run`, `--keep-pods` and `--bundle` (the lab side is `lab::watch`).

use crate::common;
use common::article::*;
use common::*;

#[test]
fn watch_does_not_mix_with_dry_run_keep_pods_or_bundle() {
    for extra in ["--dry-run", "--keep-pods", "--bundle=x.tar.gz"] {
        let env = Env::new(SET, Workload::ok());
        let run = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--watch", extra]);
        run.expect_code(2);
        assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
    }
}
