//! The tests that run the fake's pods in a lab (tests/lab), and only as root: each carries the
//! gate `#[cfg_attr(not(etcdnet_lab), ignore = ...)]` (tests/fakeapi/build.rs) and calls
//! `etcdnet_lab::require` first, so elsewhere they are counted as ignored, never as passed.

mod helpers;

mod jumpbox;
mod many_clusters_binary;
mod pods;
