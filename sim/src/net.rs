//! The simulated network: FIFO links with seeded latency, partitions, and connection resets.
//!
//! Every node has a mailbox. [`Net::send`] picks a latency from the network's own seeded PRNG;
//! the message arrives after it, but never before an earlier message on the same link: links
//! are FIFO, like the TCP connections ZooKeeper uses, and ZooKeeper's ordering guarantees (one
//! client's requests in order; a watch event before the reply that reflects it; proposals and
//! commits in zxid order on a follower) rest on that.
//!
//! **FIFO by construction.** Each directed link has one queue of messages in flight, in the
//! order they were sent, each with its arrival time (at least the previous one's). One delivery
//! task per link, its *courier*, sleeps until the head's arrival time and hands over every
//! message whose time has come, in queue order, at one wake-up; when the queue is empty it
//! parks until the next send wakes it. The courier sleeps until the exact arrival time, so a
//! latency under a millisecond is honoured as drawn (madsim's own `sleep_until` never sleeps
//! less than 1 ms: see [`crate::clock::sleep_until_exact`]). An earlier design gave each
//! message its own task and timer; messages sent within one millisecond then woke together and
//! arrived in the executor's order, not the link's.
//!
//! A partition behaves as it does under TCP: a message sent into a cut link is *held* (TCP keeps
//! retransmitting it), and delivered in order when the link is restored, unless one end gave up
//! on the connection first ([`Net::reset`]: a client that moves to another server, a process
//! that dies); then it is lost. The sender learns nothing either way. A message to a process that
//! is down, or that restarted since the message was sent, is lost; but a client's attempt to
//! *connect* to a server whose process is down is refused at once (its host answers with a
//! reset, as a real host does when nothing listens on the port), where an attempt into a
//! partition hears nothing and times out.
//!
//! The courier runs on the sending node (it is started by the link's first send), so a crashed
//! sender loses what it had not yet put on the wire (its courier dies with it, and
//! [`Net::detach`] empties its links), and a paused one delivers late. Messages released by
//! [`Net::restore`] on a link without a courier are carried by one on the node that healed the
//! partition, which ends once they are delivered rather than parking there.
//!
//! Every run also audits its links: each message gets a number per link when sent, and
//! [`Net::link_order`] counts deliveries, and deliveries that came after a later-sent one.
//!
//! Not modelled: packet loss inside a connection (TCP retransmits), bandwidth, reordering
//! across links beyond what latency causes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::Duration;

use crate::clock::{sleep_until_exact, Instant};
use madsim::time::TimeHandle;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::protocol::{Addr, Message};

/// A message with its sender.
#[derive(Debug)]
pub struct Envelope {
    /// The sender.
    pub from: Addr,
    /// The client connection it travels on (0 between servers): like a TCP connection, a
    /// message belongs to one, and the client drops what comes on a connection it has left.
    pub conn: u64,
    /// The message.
    pub message: Message,
}

/// What the network's audit saw of its links' order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkOrder {
    /// Messages handed to a live mailbox.
    pub delivered: u64,
    /// Of those, messages that had been held by a cut link and released when it healed.
    pub delivered_after_heal: u64,
    /// Deliveries that came after a message sent later on the same link (0 on FIFO links).
    pub out_of_order: u64,
}

/// A message sent and not yet delivered, with its number on its link.
type Sent = (u64, u64, Message);

/// A message on the wire.
struct InFlight {
    arrives: Instant,
    number: u64,
    conn: u64,
    message: Message,
    /// The receiver's mailbox when the message was sent: a receiver that restarted since has a
    /// new one, and the message is lost with the old.
    mailbox: UnboundedSender<Envelope>,
    released_by_heal: bool,
}

#[derive(Default)]
struct Link {
    in_flight: VecDeque<InFlight>,
    /// When the last message put on the wire arrives: the next may not arrive before.
    last_arrival: Option<Instant>,
    /// The courier now serving `in_flight`, by number; `None` when none is running.
    courier: Option<u64>,
    /// The waker of the courier, when it is parked on an empty queue.
    parked: Option<Waker>,
    /// Messages sent while the link was cut, oldest first, waiting for it to be restored.
    held: Vec<Sent>,
    /// Messages numbered so far (the audit's send order).
    sent: u64,
    /// The number of the last message delivered (the audit's delivery order).
    last_delivered: Option<u64>,
}

impl Link {
    /// Forgets the connection: what is in flight or held is lost, and a running courier ends
    /// at its next wake-up. The audit's numbering goes on.
    fn reset(&mut self) {
        self.in_flight.clear();
        self.held.clear();
        self.last_arrival = None;
        self.courier = None;
        // A parked courier wakes, finds it no longer serves the link, and ends.
        if let Some(courier) = self.parked.take() {
            courier.wake();
        }
    }
}

struct NetState {
    mailboxes: BTreeMap<Addr, UnboundedSender<Envelope>>,
    links: BTreeMap<(Addr, Addr), Link>,
    /// Directed links that carry nothing for now.
    cut: BTreeSet<(Addr, Addr)>,
    couriers_started: u64,
    order: LinkOrder,
    /// The run's clock, kept rather than looked up in madsim's context at every send.
    time: TimeHandle,
    rng: ChaCha8Rng,
    latency_us: Range<u64>,
    started: Instant,
}

impl NetState {
    fn reset_links_of(&mut self, addr: Addr) {
        for ((from, to), link) in &mut self.links {
            if *from == addr || *to == addr {
                link.reset();
            }
        }
    }
}

/// What a courier does after a wake-up.
enum Next {
    SleepUntil(Instant),
    /// Nothing in flight: wait for the next send (a courier started by a heal ends instead).
    Idle,
    Stop,
}

/// The network shared by every node of one run.
pub struct Net {
    state: Arc<Mutex<NetState>>,
}

fn lock(state: &Mutex<NetState>) -> MutexGuard<'_, NetState> {
    state
        .lock()
        .expect("network mutex poisoned by a panicking node")
}

impl Net {
    /// A network whose latencies come from `rng`, uniformly in `latency_us`.
    pub fn new(rng: ChaCha8Rng, latency_us: Range<u64>) -> Arc<Net> {
        assert!(
            latency_us.start < latency_us.end,
            "latency range {latency_us:?} is empty"
        );
        let time = TimeHandle::current();
        Arc::new(Net {
            state: Arc::new(Mutex::new(NetState {
                mailboxes: BTreeMap::new(),
                links: BTreeMap::new(),
                cut: BTreeSet::new(),
                couriers_started: 0,
                order: LinkOrder::default(),
                rng,
                latency_us,
                started: time.now_instant(),
                time,
            })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, NetState> {
        lock(&self.state)
    }

    /// Simulated microseconds since the network was made (the run's clock for the history).
    pub fn now_us(&self) -> u64 {
        let state = self.lock();
        let elapsed = state.time.now_instant().duration_since(state.started);
        u64::try_from(elapsed.as_micros()).expect("a run lasts less than 500k years")
    }

    /// What the audit saw so far: deliveries, and deliveries out of their link's send order.
    pub fn link_order(&self) -> LinkOrder {
        self.lock().order
    }

    /// Gives `addr` a fresh mailbox (a process starting or restarting) and returns its inbox.
    /// Messages sent to or from the previous incarnation are lost.
    pub fn attach(&self, addr: Addr) -> UnboundedReceiver<Envelope> {
        let (tx, rx) = unbounded_channel();
        let mut state = self.lock();
        state.mailboxes.insert(addr, tx);
        state.reset_links_of(addr);
        rx
    }

    /// Removes `addr`'s mailbox (a process dying); what was in flight or held, to or from it,
    /// is lost.
    pub fn detach(&self, addr: Addr) {
        let mut state = self.lock();
        state.mailboxes.remove(&addr);
        state.reset_links_of(addr);
    }

    /// `addr` gave up on its connections (a client moving to another server): what a partition
    /// held on its links is lost, as TCP data is when a socket is closed.
    pub fn reset(&self, addr: Addr) {
        for ((from, to), link) in &mut self.lock().links {
            if *from == addr || *to == addr {
                link.held.clear();
            }
        }
    }

    /// Sends `message` from `from` to `to`, between servers.
    pub fn send(&self, from: Addr, to: Addr, message: Message) {
        self.send_on(from, to, 0, message);
    }

    /// Sends `message` from `from` to `to` on client connection `conn`.
    pub fn send_on(&self, from: Addr, to: Addr, conn: u64, message: Message) {
        let mut state = self.lock();
        let cut = state.cut.contains(&(from, to));
        let link = state.links.entry((from, to)).or_default();
        let number = link.sent;
        link.sent += 1;
        if cut {
            link.held.push((number, conn, message));
            return;
        }
        if matches!((to, &message), (Addr::Server(_), Message::Connect { .. }))
            && !state.mailboxes.contains_key(&to)
        {
            refuse(&state, (from, to), conn);
            return;
        }
        self.put_on_wire(&mut state, (from, to), (number, conn, message), false);
    }

    /// Puts a message on the link's wire with a fresh latency, and starts a courier on the
    /// current node if the link has none.
    fn put_on_wire(
        &self,
        state: &mut NetState,
        (from, to): (Addr, Addr),
        (number, conn, message): Sent,
        released_by_heal: bool,
    ) {
        let Some(mailbox) = state.mailboxes.get(&to).cloned() else {
            return;
        };
        let range = state.latency_us.clone();
        let latency = Duration::from_micros(state.rng.random_range(range));
        let courier_number = state.couriers_started;
        let now = state.time.now_instant();
        let link = state
            .links
            .get_mut(&(from, to))
            .expect("a link sent on exists");
        let mut arrives = now + latency;
        if let Some(last) = link.last_arrival {
            arrives = arrives.max(last);
        }
        link.last_arrival = Some(arrives);
        link.in_flight.push_back(InFlight {
            arrives,
            number,
            conn,
            message,
            mailbox,
            released_by_heal,
        });
        if link.courier.is_none() {
            link.courier = Some(courier_number);
            state.couriers_started += 1;
            let shared = Arc::clone(&self.state);
            let time = state.time.clone();
            let parks = !released_by_heal;
            madsim::task::spawn(courier(shared, time, (from, to), courier_number, parks));
        } else if let Some(courier) = link.parked.take() {
            courier.wake();
        }
    }

    /// Cuts the directed link `from → to`.
    pub fn cut(&self, from: Addr, to: Addr) {
        self.lock().cut.insert((from, to));
    }

    /// Restores the directed link `from → to`, and puts what it held on the wire, in order.
    pub fn restore(&self, from: Addr, to: Addr) {
        let mut state = self.lock();
        state.cut.remove(&(from, to));
        let held = match state.links.get_mut(&(from, to)) {
            Some(link) => std::mem::take(&mut link.held),
            None => return,
        };
        for sent in held {
            self.put_on_wire(&mut state, (from, to), sent, true);
        }
    }

    /// Restores every link.
    pub fn heal_all(&self) {
        let cut: Vec<(Addr, Addr)> = self.lock().cut.iter().copied().collect();
        for (from, to) in cut {
            self.restore(from, to);
        }
    }

    /// Tells every node that had a connection to `dead` that it broke, after `delay`: what a TCP
    /// reset or FIN tells the peers of a crashed process. Only peers reachable from `dead` hear
    /// it (a cut link carries no reset).
    pub fn announce_death(&self, dead: Addr, peers: &[Addr], delay: Duration) {
        let targets: Vec<(Addr, UnboundedSender<Envelope>)> = {
            let state = self.lock();
            peers
                .iter()
                .filter(|peer| **peer != dead && !state.cut.contains(&(dead, **peer)))
                .filter_map(|peer| state.mailboxes.get(peer).map(|m| (*peer, m.clone())))
                .collect()
        };
        madsim::task::spawn(async move {
            madsim::time::sleep(delay).await;
            for (_, mailbox) in targets {
                let _ = mailbox.send(Envelope {
                    from: dead,
                    conn: 0,
                    message: Message::PeerDown,
                });
            }
        });
    }
}

/// A connection attempt to a server whose process is not running, on a host that is: the host
/// answers at once that nothing listens on the port (a TCP reset, "connection refused"), one
/// round trip at the network's shortest latency later. The client tries another server (a real
/// client's connect fails with `ConnectException` and it moves on). A server cut off by a
/// partition is another matter: nothing answers, and the client's attempt times out.
fn refuse(state: &NetState, (client, server): (Addr, Addr), conn: u64) {
    let Some(mailbox) = state.mailboxes.get(&client).cloned() else {
        return;
    };
    let round_trip = Duration::from_micros(2 * state.latency_us.start);
    let time = state.time.clone();
    let at = time.now_instant() + round_trip;
    madsim::task::spawn(async move {
        sleep_until_exact(&time, at).await;
        let _ = mailbox.send(Envelope {
            from: server,
            conn,
            message: Message::Refused,
        });
    });
}

/// A link's courier: delivers what is due, sleeps until the next arrival, parks while the link
/// is empty (or ends, unless `parks`), and ends once it no longer serves the link (a reset, or
/// its node's death).
async fn courier(
    state: Arc<Mutex<NetState>>,
    time: TimeHandle,
    link: (Addr, Addr),
    me: u64,
    parks: bool,
) {
    let _serving = Serving {
        state: Arc::clone(&state),
        link,
        me,
    };
    loop {
        match deliver_due(&state, link, me, parks) {
            Next::SleepUntil(at) => sleep_until_exact(&time, at).await,
            Next::Idle => parked(&state, link, me).await,
            Next::Stop => return,
        }
    }
}

/// Waits until `link` has something in flight, or `me` no longer serves it.
async fn parked(state: &Mutex<NetState>, link: (Addr, Addr), me: u64) {
    std::future::poll_fn(|cx| {
        let mut state = lock(state);
        let link = state
            .links
            .get_mut(&link)
            .expect("a link with a courier exists");
        if link.courier != Some(me) || !link.in_flight.is_empty() {
            return Poll::Ready(());
        }
        link.parked = Some(cx.waker().clone());
        Poll::Pending
    })
    .await;
}

/// Marks the link as without a courier when its courier ends, however it ends (a killed node
/// drops its tasks), so that the next send starts another.
struct Serving {
    state: Arc<Mutex<NetState>>,
    link: (Addr, Addr),
    me: u64,
}

impl Drop for Serving {
    fn drop(&mut self) {
        // A poisoned lock is a run already failing: nothing to keep consistent.
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Some(link) = state.links.get_mut(&self.link) {
            if link.courier == Some(self.me) {
                link.courier = None;
                link.parked = None;
            }
        }
    }
}

/// Hands every message of `link` whose time has come to its mailbox, in link order.
fn deliver_due(state: &Mutex<NetState>, (from, to): (Addr, Addr), me: u64, parks: bool) -> Next {
    let mut state = lock(state);
    let state = &mut *state;
    let link = state
        .links
        .get_mut(&(from, to))
        .expect("a link with a courier exists");
    if link.courier != Some(me) {
        return Next::Stop;
    }
    let now = state.time.now_instant();
    while let Some(head) = link.in_flight.front() {
        if head.arrives > now {
            return Next::SleepUntil(head.arrives);
        }
        let sent = link.in_flight.pop_front().expect("a head");
        let envelope = Envelope {
            from,
            conn: sent.conn,
            message: sent.message,
        };
        // A closed mailbox is a process that died meanwhile: the message is lost.
        if sent.mailbox.send(envelope).is_ok() {
            state.order.delivered += 1;
            state.order.delivered_after_heal += u64::from(sent.released_by_heal);
            if link.last_delivered.is_some_and(|last| last > sent.number) {
                state.order.out_of_order += 1;
            }
            link.last_delivered = Some(sent.number);
        }
    }
    if parks {
        Next::Idle
    } else {
        link.courier = None;
        Next::Stop
    }
}
