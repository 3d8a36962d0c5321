//! The proptest configuration the fuzz tests share: a fixed seed unless `PROPTEST_RNG_SEED`
//! or a config file chooses one, so that CI runs the same cases every time.

use proptest::prelude::ProptestConfig;
use proptest::test_runner::RngSeed;

/// `cases` cases from seed 0 (unless the environment sets a seed).
pub fn fixed(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases);
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(0);
    }
    config
}
