//! The model checker on the recipes' own machines.
#![cfg(not(madsim))]

use zkh_model::check::{check, FaultBudget, LatchWorkload, LockWorkload, RecipeModel};
use zkh_recipes::latch::LatchVariant;
use zkh_recipes::lock::LockVariant;

#[test]
fn probe() {
    let budget = FaultBudget::STANDARD;
    let which = std::env::var("WHICH").unwrap();
    let t = std::time::Instant::now();
    let v = if which == "lock" {
        check(&RecipeModel {
            workload: LockWorkload {
                variant: LockVariant::Correct,
            },
            clients: 3,
            budget,
        })
    } else {
        check(&RecipeModel {
            workload: LatchWorkload {
                variant: LatchVariant::Correct,
            },
            clients: 3,
            budget,
        })
    };
    println!(
        "{which}3 standard {} {:?} {:?} {:?}",
        v.unique_states,
        v.violation,
        v.unreached,
        t.elapsed()
    );
}
