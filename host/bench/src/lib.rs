//! # wasmgate-bench
//!
//! A load generator for a running wasmgate (or any Kubernetes API server reachable with a
//! client-certificate kubeconfig). It measures `create`, `get`, `update` and `list`
//! throughput and latency with N concurrent clients, and watch fan-out: delivery latency
//! and exactly-once, in-order delivery to W watchers while objects are created at a fixed
//! rate. See `wasmgate-bench --help`.
//!
//! ## Layout
//! * [`cli`] — flags.
//! * [`kubeconfig`] — server URL and credentials.
//! * [`client`] — a lean hyper 1.x client over tokio-rustls (HTTP/1.1 or HTTP/2).
//! * [`objects`] — pre-rendered request bodies.
//! * [`plugins`] — the Wasm plugins a run binds (`--plugins`, `--plugin-pair`).
//! * [`stats`] — latency histograms, error tallies, CPU accounting.
//! * [`watchline`] — watch stream framing and the fields the benchmark reads.
//! * [`bench`], [`load`], [`watch`], [`connections`] — the scenarios; [`report`] — the
//!   summary.
#![forbid(unsafe_code)]

pub mod bench;
pub mod cli;
pub mod client;
pub mod connections;
pub mod kubeconfig;
pub mod load;
pub mod objects;
pub mod plugins;
pub mod report;
pub mod stats;
pub mod watch;
pub mod watchline;
