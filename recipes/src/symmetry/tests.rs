//! Tests of renamed hashing: a renamed value hashes as the value renamed, under every renaming.

use super::*;
use crate::request::Response;
use crate::types::{SessionId, Stat};
use std::collections::BTreeSet;

/// `value`'s hash under each renaming of `all`, from one recording of its skeleton.
fn skeleton_hashes<T: Symmetric>(value: &T, all: &Renamings) -> Vec<u64> {
    let recording = Recording::of(value, all);
    all.iter()
        .map(|renaming| recording.hash_under(value, &renaming))
        .collect()
}

fn renamings() -> Renamings {
    Renamings::new(vec![SessionId(10), SessionId(11), SessionId(12)])
}

/// The renaming of 3 clients that maps 0 to 1, 1 to 2 and 2 to 0.
fn rotation(all: &Renamings) -> Renaming<'_> {
    all.iter()
        .find(|r| (r.client(0), r.client(1), r.client(2)) == (1, 2, 0))
        .expect("a rotation is among the permutations")
}

#[test]
fn there_is_one_renaming_per_permutation_the_identity_first() {
    let all = renamings();
    assert_eq!(all.len(), 6);
    let identity = all.get(0);
    assert!((0..3).all(|c| identity.client(c) == c));
    let distinct: std::collections::BTreeSet<Vec<u32>> = all
        .iter()
        .map(|r| (0..3).map(|c| r.client(c)).collect())
        .collect();
    assert_eq!(distinct.len(), 6);
    for renaming in all.iter() {
        let permutation: Vec<u32> = (0..3).map(|c| renaming.client(c)).collect();
        assert_eq!(all.index_of(&permutation), Some(renaming.index()));
    }
    assert_eq!(
        all.index_of(&[0, 0, 1]),
        None,
        "two clients cannot both become 0"
    );
    assert_eq!(
        all.index_of(&[0, 1]),
        None,
        "a renaming renames every client"
    );
    assert_eq!(all.index_of(&[0, 1, 7]), None, "there is no client 7");
    let rotation = rotation(&all);
    assert_eq!(rotation.client_at(1), 0, "client 0 becomes client 1");
}

#[test]
fn a_renamed_hash_is_the_hash_of_the_renamed_value() {
    let all = renamings();
    let rotation = rotation(&all);
    let identity = all.get(0);
    let path = format!("/lock/_c_{}-lock-0000000003", identity_of(0));
    let renamed = format!("/lock/_c_{}-lock-0000000003", identity_of(1));
    assert_eq!(
        renamed_hash(&path, &rotation),
        renamed_hash(&renamed, &identity)
    );
    assert_ne!(
        renamed_hash(&path, &identity),
        renamed_hash(&renamed, &identity),
        "different names hash apart"
    );
    assert_eq!(
        renamed_hash(&SessionId(12), &rotation),
        renamed_hash(&SessionId(10), &identity),
        "client 2's first session becomes client 0's"
    );
    assert_eq!(
        renamed_hash(&SessionId(99), &rotation),
        renamed_hash(&SessionId(99), &identity),
        "a later session keeps its number"
    );
}

fn identity_of(client: usize) -> String {
    identity("c", client)
}

#[test]
fn children_sorted_by_name_hash_alike_after_a_renaming_reorders_them() {
    let all = renamings();
    let rotation = rotation(&all);
    let names = |a: usize, b: usize| {
        let mut names = vec![
            format!("_c_{}-latch-0000000001", identity_of(a)),
            format!("_c_{}-latch-0000000002", identity_of(b)),
        ];
        names.sort();
        Response::Children(names, Stat::default())
    };
    // Clients 0 and 2 become 1 and 0: the renamed names sort the other way round.
    assert_eq!(
        renamed_hash(&names(0, 2), &rotation),
        renamed_hash(&names(1, 0), &all.get(0))
    );
    assert_ne!(
        renamed_hash(&names(0, 2), &all.get(0)),
        renamed_hash(&names(2, 0), &all.get(0)),
        "which client holds which sequence number still counts"
    );
}

#[test]
fn a_skeleton_holds_sets_whose_members_hold_identities() {
    // A watch table: paths with identities in them, each watched by sessions.
    let all = Renamings::new(vec![SessionId(10), SessionId(11), SessionId(12)]);
    let table = |a: usize, b: usize, watcher: i64| {
        let mut watched = std::collections::BTreeMap::new();
        let node = |c: usize| format!("/latch/_c_{}-latch-0000000001", identity_of(c));
        watched.insert(node(a), BTreeSet::from([SessionId(watcher), SessionId(99)]));
        watched.insert(node(b), BTreeSet::new());
        watched.insert("/latch".to_owned(), BTreeSet::from([SessionId(watcher)]));
        (watched, identity_of(a))
    };
    let value = table(0, 2, 11);
    let skeletons = skeleton_hashes(&value, &all);
    for renaming in all.iter() {
        // Client c becomes renaming.client(c); its first session, 10 + c, goes with it.
        let to = |c: usize| renaming.client(c as u32) as usize;
        let renamed = table(to(0), to(2), 10 + to(1) as i64);
        assert_eq!(
            skeletons[renaming.index()],
            skeleton_hashes(&renamed, &all)[0],
            "renaming {}",
            renaming.index()
        );
        // As faithful as hashing each renamed value.
        assert_eq!(
            renamed_hash(&value, &renaming),
            renamed_hash(&renamed, &all.get(0))
        );
    }
    let other = skeleton_hashes(&table(0, 2, 12), &all);
    assert!(
        !other.contains(&skeletons[0]),
        "who watches still counts, under every renaming"
    );
}

#[test]
fn many_identities_hash_renamed_as_the_renamed_value_does() {
    let all = renamings();
    // More identities than one packed word holds, in an order a renaming keeps.
    let names = |clients: &[usize]| -> String {
        let names: Vec<String> = clients.iter().map(|c| identity_of(*c)).collect();
        names.join("/")
    };
    let order: Vec<usize> = (0..40).map(|i| (i * 7 + i / 3) % 3).collect();
    let value = (names(&order), identity_of(1));
    let hashes = skeleton_hashes(&value, &all);
    for renaming in all.iter() {
        let to = |c: usize| renaming.client(c as u32) as usize;
        let renamed: Vec<usize> = order.iter().map(|c| to(*c)).collect();
        let renamed = (names(&renamed), identity_of(to(1)));
        assert_eq!(
            hashes[renaming.index()],
            skeleton_hashes(&renamed, &all)[0],
            "renaming {}",
            renaming.index()
        );
    }
    let mut swapped = order.clone();
    swapped.swap(0, 20);
    assert_ne!(order, swapped, "the swap changes the order");
    let other = skeleton_hashes(&(names(&swapped), identity_of(1)), &all);
    assert!(
        !other.contains(&hashes[0]),
        "which identity stands where still counts"
    );
}

#[test]
fn text_without_tokens_and_long_text_hash_as_themselves() {
    let all = renamings();
    let rotation = rotation(&all);
    let plain = "/job/leader/election/instance".to_owned();
    assert_eq!(
        renamed_hash(&plain, &rotation),
        renamed_hash(&plain, &all.get(0))
    );
    let long = format!("{}/{}", "x".repeat(200), identity_of(2));
    let renamed = format!("{}/{}", "x".repeat(200), identity_of(0));
    assert_eq!(
        renamed_hash(&long, &rotation),
        renamed_hash(&renamed, &all.get(0))
    );
    let out_of_range = "a#7 and a# alone".to_owned();
    assert_eq!(
        renamed_hash(&out_of_range, &rotation),
        renamed_hash(&out_of_range, &all.get(0))
    );
}
