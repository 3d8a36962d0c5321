//! The ID allocator's own command line: `run` and `sweep` its scenarios on the simulated
//! ensemble (`RUSTFLAGS="--cfg madsim" cargo run -p zkh-example-id-allocator -- sweep
//! examples/id-allocator/scenarios/*.toml`).
zkh_scenarios::custom_main!(zkh_example_id_allocator::IdAllocator);
