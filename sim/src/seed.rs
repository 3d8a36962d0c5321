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
    /// One client process's application: a user's recipe's own random choices.
    App(u32),
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
        Subsystem::App(id) => 0x2000 + u64::from(id),
    };
    mix(mix(seed) ^ mix(salt))
}

/// The PRNG of `subsystem` for the run `seed`.
pub fn sub_rng(seed: u64, subsystem: Subsystem) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(sub_seed(seed, subsystem))
}

/// The seeds a test loops over: `range`, or, when the environment variable `ZKH_SEED` is set,
/// that seed alone: the one a failing seed's message names (`run::run_seed` says "replay it
/// with ZKH_SEED=N"), so that a failure is replayed without editing the test.
///
/// # Panics
/// If `ZKH_SEED` is set to something other than a seed (a whole number).
pub fn seeds(range: std::ops::Range<u64>) -> Vec<u64> {
    seeds_from(range, std::env::var("ZKH_SEED").ok().as_deref())
        .unwrap_or_else(|bad| panic!("{bad}"))
}

fn seeds_from(range: std::ops::Range<u64>, pinned: Option<&str>) -> Result<Vec<u64>, String> {
    match pinned {
        Some(text) => text
            .trim()
            .parse()
            .map(|seed| vec![seed])
            .map_err(|_| format!("ZKH_SEED={text:?} is not a seed (a whole number)")),
        None => Ok(range.collect()),
    }
}

#[cfg(test)]
mod seeds_tests {
    use super::*;

    #[test]
    fn zkh_seed_pins_the_one_seed_a_loop_runs() {
        assert_eq!(seeds_from(0..3, None), Ok(vec![0, 1, 2]));
        assert_eq!(
            seeds_from(0..3, Some("7698")),
            Ok(vec![7698]),
            "even outside the range"
        );
        assert_eq!(
            seeds_from(0..3, Some("seven")),
            Err("ZKH_SEED=\"seven\" is not a seed (a whole number)".to_owned()),
            "a bad ZKH_SEED is refused"
        );
    }
}
