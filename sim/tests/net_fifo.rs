//! The simulated network's links are FIFO, as the TCP connections ZooKeeper uses are: messages
//! sent on one link arrive in the order sent, whatever latencies were drawn for them, and a
//! latency under a millisecond is honoured as drawn.
#![cfg(madsim)]

use std::collections::BTreeMap;
use std::time::Duration;

use zkh_recipes::SessionId;
use zkh_sim::clock::now;
use zkh_sim::net::Net;
use zkh_sim::protocol::{Addr, Message};
use zkh_sim::run::run_seed;
use zkh_sim::seed::{sub_rng, Subsystem};

/// A message numbered `n` on its link.
fn numbered(n: u64) -> Message {
    Message::Close {
        xid: n,
        session: SessionId(0),
    }
}

fn number(message: &Message) -> u64 {
    match message {
        Message::Close { xid, .. } => *xid,
        other => panic!("the test sends only numbered Close messages, got {other:?}"),
    }
}

/// What a burst delivered: per sender, the numbers in arrival order; the senders in arrival
/// order; and the last arrival, from the instant of sending.
struct Delivered {
    per_sender: BTreeMap<Addr, Vec<u64>>,
    senders: Vec<Addr>,
    last: Duration,
}

/// Sends `per_link` messages on each of three links into one receiver, all in the same
/// simulated instant, with latencies drawn from `latency_us`, and returns what arrived.
async fn burst(seed: u64, per_link: u64, latency_us: std::ops::Range<u64>) -> Delivered {
    let net = Net::new(sub_rng(seed, Subsystem::Network), latency_us);
    let to = Addr::Server(1);
    let mut inbox = net.attach(to);
    let senders = [Addr::Client(0), Addr::Client(1), Addr::Server(2)];
    for sender in senders {
        let _ = net.attach(sender);
    }
    let sent_at = now();
    for n in 0..per_link {
        for sender in senders {
            net.send_on(sender, to, 1, numbered(n));
        }
    }
    let mut delivered = Delivered {
        per_sender: BTreeMap::new(),
        senders: Vec::new(),
        last: Duration::ZERO,
    };
    for _ in 0..per_link * senders.len() as u64 {
        let envelope = inbox.recv().await.expect("every message arrives");
        delivered.last = now().duration_since(sent_at);
        delivered.senders.push(envelope.from);
        delivered
            .per_sender
            .entry(envelope.from)
            .or_default()
            .push(number(&envelope.message));
    }
    delivered
}

/// Latencies of 200 to 2,000 µs, some below and some above 1 ms: madsim's timers, which never
/// sleep less than 1 ms, once woke such messages together and delivered them in the executor's
/// order.
#[test]
fn messages_sent_on_one_link_in_one_instant_arrive_in_the_order_sent() {
    let sent: Vec<u64> = (0..50).collect();
    for seed in zkh_sim::seed::seeds(0..20) {
        let delivered = run_seed(seed, 60, |seed| burst(seed, 50, 200..2000));
        for (sender, numbers) in &delivered.per_sender {
            assert_eq!(
                numbers, &sent,
                "seed {seed}: the link from {sender:?} delivered out of the order sent"
            );
        }
        // Links are independent: the three senders' messages interleave at the receiver.
        let switches = delivered
            .senders
            .windows(2)
            .filter(|w| w[0] != w[1])
            .count();
        assert!(
            switches > 2,
            "seed {seed}: the three links' messages did not interleave ({switches} switches)"
        );
    }
}

/// Latencies of 100 to 900 µs arrive within 900 µs, not lifted to madsim's 1 ms minimum sleep.
#[test]
fn a_latency_under_a_millisecond_is_honoured_as_drawn() {
    for seed in zkh_sim::seed::seeds(0..20) {
        let delivered = run_seed(seed, 60, |seed| burst(seed, 20, 100..900));
        assert!(
            delivered.last < Duration::from_micros(901),
            "seed {seed}: the last of 60 messages with latencies under 900 µs took {:?}",
            delivered.last
        );
        assert_eq!(
            delivered.senders.len(),
            60,
            "seed {seed}: every message arrives"
        );
    }
}

/// Over whole runs of the standard failover with the harsh random faults (partitions that heal,
/// pauses, crashes, leader kills), every link delivers in the order it was sent, including what
/// a partition held and released when it healed.
#[test]
fn whole_runs_deliver_every_link_in_send_order_across_healed_partitions() {
    let mut delivered = 0;
    let mut after_heal = 0;
    for seed in zkh_sim::seed::seeds(0..30) {
        let outcome = run_seed(seed, 600, |seed| {
            zkh_sim::standard::run(seed, zkh_sim::standard::harsh_plan())
        });
        let links = outcome.links;
        assert_eq!(
            links.out_of_order, 0,
            "seed {seed}: {} of {} deliveries came after a message sent later on their link",
            links.out_of_order, links.delivered
        );
        assert!(
            links.delivered > 100,
            "seed {seed}: only {} deliveries",
            links.delivered
        );
        delivered += links.delivered;
        after_heal += links.delivered_after_heal;
    }
    println!("30 seeds: {delivered} deliveries in link order, {after_heal} of them held by a partition and released when it healed");
    assert!(
        after_heal > 0,
        "no seed delivered a message held by a partition: the test does not cover a heal"
    );
}
