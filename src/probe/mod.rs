//! The probe stage: what runs on each control-plane node and how its output is read.
//! `etcdlog` classifies etcd's log lines into findings.

pub mod etcdlog;
pub mod output;
