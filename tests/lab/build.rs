// The same decision as the plugin crate makes for its lab tests (see the file): the lab crate's
// own tests in tests/ run real etcd.
include!("../../build.rs");
