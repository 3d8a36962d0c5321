//! A real three-server ZooKeeper ensemble on 127.0.0.1, from Debian's `zookeeper` package.
//!
//! [`Ensemble::start`] writes a configuration per server into a fresh directory (its own data
//! directory and `myid`; a client, quorum and election port each, all on the loopback; ZooKeeper's
//! default `tickTime` of 2 s, so the shortest session is 4 s), starts each server as a child
//! `java` process running `QuorumPeerMain`, and waits until one leads and the others follow, as
//! each answers the `srvr` four-letter command. The servers are stopped by their PIDs when the
//! [`Ensemble`] is dropped, on every path out of the program that unwinds (a failed start, a
//! panic, a normal end): first asked to stop, then killed; the directory goes with them.
//!
//! Not handled: a signal that ends the program without unwinding (Ctrl-C, SIGKILL) leaves its
//! servers running, orphaned; a later start takes other ports. The measurement that uses the
//! ensemble runs for a minute or two.
//!
//! The servers log at INFO, so that what they refused can be counted afterwards
//! ([`Ensemble::log_lines_containing`]).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's package puts ZooKeeper and its logging jars.
const CLASSPATH: &str =
    "/usr/share/java/zookeeper.jar:/usr/share/java/log4j-1.2.jar:/usr/share/java/slf4j-log4j12.jar";

/// How long the ensemble may take to elect a leader with every follower in sync.
const START_BOUND: Duration = Duration::from_secs(60);

/// One server of the ensemble.
struct Server {
    /// `myid`.
    id: u32,
    client_port: u16,
    process: Child,
}

/// A running three-server ensemble; dropping it stops every server.
pub struct Ensemble {
    servers: Vec<Server>,
    dir: PathBuf,
}

/// The role a server reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Leads the ensemble.
    Leader,
    /// Follows the leader.
    Follower,
}

impl Ensemble {
    /// Starts three servers under a fresh directory in `parent` and waits until they form a
    /// quorum. Errors name what is missing (Java or the package) or which server did not come
    /// up, with the tail of its log.
    pub fn start(parent: &Path) -> Result<Ensemble, String> {
        if !Path::new("/usr/share/java/zookeeper.jar").exists() {
            return Err(
                "Debian's zookeeper package is not installed (scripts/test-deps installs it)"
                    .into(),
            );
        }
        let dir = fresh_dir(parent)?;
        let ports = free_ports(9)?;
        let mut ensemble = Ensemble {
            servers: Vec::new(),
            dir,
        };
        let peers: String = (0..3)
            .map(|i| {
                format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    i + 1,
                    ports[3 * i + 1],
                    ports[3 * i + 2]
                )
            })
            .collect();
        for i in 0..3 {
            let id = i as u32 + 1;
            let client_port = ports[3 * i];
            let process = ensemble.spawn_server(id, client_port, &peers)?;
            ensemble.servers.push(Server {
                id,
                client_port,
                process,
            });
        }
        ensemble.await_quorum()?;
        Ok(ensemble)
    }

    fn spawn_server(&self, id: u32, client_port: u16, peers: &str) -> Result<Child, String> {
        let home = self.dir.join(format!("server{id}"));
        let data = home.join("data");
        std::fs::create_dir_all(&data).map_err(|e| format!("{}: {e}", data.display()))?;
        write(&data.join("myid"), &format!("{id}\n"))?;
        let config = format!(
            "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={client_port}\n\
             clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n\
             4lw.commands.whitelist=ruok,srvr\n{peers}",
            data.display()
        );
        write(&home.join("zoo.cfg"), &config)?;
        write(
            &home.join("log4j.properties"),
            "log4j.rootLogger=INFO, FILE\nlog4j.appender.FILE=org.apache.log4j.FileAppender\n\
             log4j.appender.FILE.File=${zookeeper.log.file}\n\
             log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n\
             log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n\n",
        )?;
        self.launch(id)
    }

    /// Starts server `id`'s process from the configuration in its directory.
    fn launch(&self, id: u32) -> Result<Child, String> {
        let home = self.dir.join(format!("server{id}"));
        let out = std::fs::File::options()
            .append(true)
            .create(true)
            .open(home.join("server.out"))
            .map_err(|e| format!("{}: {e}", home.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        Command::new("java")
            .arg("-Xmx256m")
            .arg(format!(
                "-Dzookeeper.log.file={}",
                home.join("zookeeper.log").display()
            ))
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                home.join("log4j.properties").display()
            ))
            .arg("-Dzookeeper.jmx.log4j.disable=true")
            .arg("-cp")
            .arg(CLASSPATH)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(home.join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start java (is Debian's zookeeper installed?): {e}"))
    }

    /// Waits until one server leads and the other two follow.
    fn await_quorum(&mut self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            for server in &mut self.servers {
                if let Ok(Some(status)) = server.process.try_wait() {
                    return Err(format!(
                        "ZooKeeper server {} exited at start ({status}); its log:\n{}",
                        server.id,
                        tail(&self.dir.join(format!("server{}", server.id)))
                    ));
                }
            }
            let modes: Vec<Option<Mode>> = self.modes();
            let leaders = modes.iter().filter(|m| **m == Some(Mode::Leader)).count();
            let followers = modes.iter().filter(|m| **m == Some(Mode::Follower)).count();
            if leaders == 1 && followers == 2 {
                return Ok(());
            }
            if started.elapsed() > START_BOUND {
                return Err(format!(
                    "the ensemble did not form within {} s (modes {modes:?}); server 1's log:\n{}",
                    START_BOUND.as_secs(),
                    tail(&self.dir.join("server1"))
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Each server's mode, as its `srvr` answer says (none if it does not answer).
    pub fn modes(&self) -> Vec<Option<Mode>> {
        self.servers.iter().map(|s| mode(s.client_port)).collect()
    }

    /// The connection string of the whole ensemble.
    pub fn connect_string(&self) -> String {
        let hosts: Vec<String> = (self.servers.iter())
            .map(|s| format!("127.0.0.1:{}", s.client_port))
            .collect();
        hosts.join(",")
    }

    /// The servers' client ports, in `myid` order.
    pub fn client_ports(&self) -> Vec<u16> {
        self.servers.iter().map(|s| s.client_port).collect()
    }

    /// The servers' PIDs.
    pub fn pids(&self) -> Vec<u32> {
        self.servers.iter().map(|s| s.process.id()).collect()
    }

    /// The `myid` of the server that leads, as the servers' `srvr` answers say.
    pub fn leader(&self) -> Option<u32> {
        let modes = self.modes();
        let index = modes.iter().position(|m| *m == Some(Mode::Leader))?;
        Some(self.servers[index].id)
    }

    /// The `myid` of the lowest-numbered server that follows.
    pub fn follower(&self) -> Option<u32> {
        let modes = self.modes();
        let index = modes.iter().position(|m| *m == Some(Mode::Follower))?;
        Some(self.servers[index].id)
    }

    /// Kills server `id` with SIGKILL (no clean stop: its clients see their connections reset).
    pub fn kill(&mut self, id: u32) -> Result<(), String> {
        let server = self.server(id)?;
        server
            .process
            .kill()
            .map_err(|e| format!("cannot kill ZooKeeper server {id}: {e}"))?;
        server
            .process
            .wait()
            .map_err(|e| format!("ZooKeeper server {id} did not end: {e}"))?;
        Ok(())
    }

    /// Starts server `id` again from its data directory, and waits until it leads or follows.
    pub fn restart(&mut self, id: u32) -> Result<(), String> {
        let process = self.launch(id)?;
        let server = self.server(id)?;
        let port = server.client_port;
        server.process = process;
        let started = Instant::now();
        while started.elapsed() < START_BOUND {
            if mode(port).is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!(
            "ZooKeeper server {id} did not rejoin within {} s; its log:\n{}",
            START_BOUND.as_secs(),
            tail(&self.dir.join(format!("server{id}")))
        ))
    }

    /// Kills every server that runs (SIGKILL), the first half of data loss.
    pub fn kill_all(&mut self) -> Result<(), String> {
        let ids: Vec<u32> = self.servers.iter().map(|s| s.id).collect();
        for id in ids {
            if let Ok(None) = self.server(id)?.process.try_wait() {
                self.kill(id)?;
            }
        }
        Ok(())
    }

    /// The second half of data loss, after [`Ensemble::kill_all`]: every server's data
    /// directory emptied (its snapshots, transaction logs and epochs; `myid` kept), and all
    /// started again at once, empty; waits for a quorum.
    pub fn start_empty(&mut self) -> Result<(), String> {
        let ids: Vec<u32> = self.servers.iter().map(|s| s.id).collect();
        for id in &ids {
            let logs = self
                .dir
                .join(format!("server{id}"))
                .join("data")
                .join("version-2");
            if logs.exists() {
                std::fs::remove_dir_all(&logs)
                    .map_err(|e| format!("cannot empty {}: {e}", logs.display()))?;
            }
        }
        for id in &ids {
            let process = self.launch(*id)?;
            self.server(*id)?.process = process;
        }
        self.await_quorum()
    }

    /// How many lines of the servers' logs contain `needle` (each server's log, whole).
    pub fn log_lines_containing(&self, needle: &str) -> usize {
        (self.servers.iter())
            .map(|s| {
                self.dir
                    .join(format!("server{}", s.id))
                    .join("zookeeper.log")
            })
            .filter_map(|log| std::fs::read_to_string(log).ok())
            .map(|text| text.lines().filter(|line| line.contains(needle)).count())
            .sum()
    }

    fn server(&mut self, id: u32) -> Result<&mut Server, String> {
        (self.servers.iter_mut())
            .find(|s| s.id == id)
            .ok_or_else(|| format!("no ZooKeeper server {id} in the ensemble"))
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for server in &mut self.servers {
            // One that was killed (and reaped) is not signalled again: its PID may be another's.
            if let Ok(Some(_)) = server.process.try_wait() {
                continue;
            }
            // SIGTERM first (a clean stop), then, after at most 5 s, SIGKILL.
            let _ = Command::new("kill")
                .arg(server.process.id().to_string())
                .status();
        }
        for server in &mut self.servers {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = server.process.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = server.process.kill();
            let _ = server.process.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server's mode from its answer to `srvr` (at most 1 s).
fn mode(port: u16) -> Option<Mode> {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    stream.write_all(b"srvr").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let line = answer.lines().find(|l| l.starts_with("Mode: "))?;
    match line.trim_start_matches("Mode: ").trim() {
        "leader" => Some(Mode::Leader),
        "follower" => Some(Mode::Follower),
        _ => None,
    }
}

/// `count` distinct free ports on 127.0.0.1 (bound all at once, then released).
fn free_ports(count: usize) -> Result<Vec<u16>, String> {
    let listeners: Vec<TcpListener> = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

fn fresh_dir(parent: &Path) -> Result<PathBuf, String> {
    for attempt in 0..100u32 {
        let dir = parent.join(format!(
            "zkharness-ensemble-{}-{attempt}",
            std::process::id()
        ));
        if std::fs::create_dir(&dir).is_ok() {
            return Ok(dir);
        }
    }
    Err(format!("cannot make a directory in {}", parent.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The last lines of a server's output and log.
fn tail(home: &Path) -> String {
    let mut text = String::new();
    for file in ["server.out", "zookeeper.log"] {
        if let Ok(content) = std::fs::read_to_string(home.join(file)) {
            let lines: Vec<&str> = content.lines().collect();
            for line in &lines[lines.len().saturating_sub(15)..] {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    text
}
