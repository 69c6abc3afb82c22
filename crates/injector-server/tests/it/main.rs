//! Integration tests: the server runs in-process on loopback with a fake injector; real
//! HTTP/1.1 and HTTP/2 clients (hyper) talk to it over verified TLS (tokio-rustls) trusting
//! the CA the server wrote.
//!
//! One test binary (faster to link), one module per concern.

// Tests report failures by panicking.
#![allow(clippy::panic, clippy::unwrap_used)]

mod admission;
mod client_auth;
mod common;
mod connections;
mod faults;
mod limits;
mod logs;
mod reload;
mod shutdown;
