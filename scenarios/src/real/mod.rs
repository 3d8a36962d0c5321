//! A real three-server ZooKeeper ensemble on 127.0.0.1 (normal build only: the simulated build
//! has no sockets) ([`ensemble`]); on it, the benchmark's real side, the standard crash
//! failover of five `LeaderLatch` processes ([`failover`], the same recipe code the simulator
//! runs); and ZooKeeper's guarantees judged on the histories of the guarantee probe under a
//! fault ([`probe`], the same checker as every simulated run), one client reaching the servers
//! through a proxy it can cut ([`proxy`]) or in a process of its own that it can stop
//! ([`paused`]).

pub mod ensemble;
pub mod failover;
pub mod paused;
pub mod probe;
pub mod proxy;
pub mod recorder;
