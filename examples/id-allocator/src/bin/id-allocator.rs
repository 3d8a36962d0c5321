//! The ID allocator's own `zkharness`: every command of it, with the allocator registered beside
//! the five built-in recipes (`RUSTFLAGS="--cfg madsim" cargo run -p zkh-example-id-allocator --
//! sweep examples/id-allocator/scenarios`).
zkh_scenarios::custom_main!(zkh_example_id_allocator::IdAllocator);
