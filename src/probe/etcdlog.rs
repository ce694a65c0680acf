//! etcd log classifier (in progress).
