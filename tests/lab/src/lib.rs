//! The lab (in progress).
