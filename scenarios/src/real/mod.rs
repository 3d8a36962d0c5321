//! The real side of the benchmark (normal build only: the simulated build has no sockets): a
//! real three-server ZooKeeper ensemble on 127.0.0.1 ([`ensemble`]), and the standard crash
//! failover of five `LeaderLatch` processes timed on it ([`failover`]), the same recipe code
//! the simulator runs.

pub mod ensemble;
pub mod failover;
