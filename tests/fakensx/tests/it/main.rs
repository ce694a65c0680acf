//! The fake NSX Manager through HTTPS, as a client sees it (one binary, a module per concern).

mod common;

mod auth;
mod binary;
mod faults;
mod pagination;
mod shapes;
mod traceflow;
mod worlds;
