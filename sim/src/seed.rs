//! The run's one source of entropy: a `u64` seed, split into a pinned PRNG per subsystem.
//!
//! Every subsystem gets its own ChaCha8 stream, derived from the seed and the subsystem's name,
//! so that adding a draw in one (say, a new fault) does not shift every other (network latency,
//! each client's choice of server). madsim's scheduler is seeded with the same seed.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A consumer of randomness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subsystem {
    /// Message latencies.
    Network,
    /// Random fault schedules.
    Faults,
    /// The application workload.
    Workload,
    /// One client's choice of servers and backoffs.
    Client(u32),
}

fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser: spreads nearby inputs far apart.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The sub-seed of `subsystem` for the run `seed`.
pub fn sub_seed(seed: u64, subsystem: Subsystem) -> u64 {
    let salt = match subsystem {
        Subsystem::Network => 1,
        Subsystem::Faults => 2,
        Subsystem::Workload => 3,
        Subsystem::Client(id) => 0x1000 + u64::from(id),
    };
    mix(mix(seed) ^ mix(salt))
}

/// The PRNG of `subsystem` for the run `seed`.
pub fn sub_rng(seed: u64, subsystem: Subsystem) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(sub_seed(seed, subsystem))
}
