//! ZooKeeper coordination recipes, and the vocabulary they are written in.
//!
//! This crate depends on no other crate of the project. It holds:
//!
//! - the ZooKeeper vocabulary: validated [paths](path), [create modes](CreateMode),
//!   [`Stat`], [errors](ZkError) that say whether an operation certainly did not happen and
//!   whether the session is gone, [watch and session events](event), and [`multi`](ops)
//!   operations;
//! - the async [`ZkClient`] trait that recipes are written against, with the guarantees every
//!   implementation gives (FIFO per client, a watch event before the data that reflects it);
//! - in the normal (non-simulated) build, `real::RealClient`, a `ZkClient` over a real
//!   ZooKeeper server.
//!
//! # The two builds
//!
//! The workspace builds in two modes. The normal build talks to real servers. The simulated
//! build (`RUSTFLAGS="--cfg madsim"`) replaces time and the network with madsim's; in it the
//! real backend does not exist, because the real client crate spawns OS threads and opens real
//! sockets.

pub mod client;
pub mod curator;
pub mod driver;
pub mod elastic_job;
pub mod election;
pub mod error;
pub mod event;
pub mod fencing;
pub mod latch;
pub mod lock;
pub mod machine;
pub mod master;
pub mod ops;
pub mod path;
pub mod request;
pub mod sharding;
pub mod symmetry;
pub mod types;

#[cfg(not(madsim))]
pub mod real;

pub use client::ZkClient;
pub use error::ZkError;
pub use event::{ClientEvent, EventType, SessionEvent, WatchedEvent};
pub use ops::{MultiError, Op, OpResult};
pub use path::{PathError, ZkPath};
pub use request::{Request, Response};
pub use types::{CreateMode, Created, SessionId, Stat, ANY_VERSION};
