//! The ID allocator's own `zkharness`: every command of it, with the allocator registered beside
//! the five built-in recipes in both of its forms, the async recipe (`id-allocator`) and the
//! machine written once for both engines (`id-allocator-machine`, which `check` and `explore`
//! take too): `RUSTFLAGS="--cfg madsim" cargo run -p zkh-example-id-allocator -- sweep
//! examples/id-allocator/scenarios`.
zkh_scenarios::custom_main!(
    zkh_example_id_allocator::IdAllocator,
    zkh_scenarios::custom::Machined<zkh_example_id_allocator::machine::AllocatorWorkload>,
);
