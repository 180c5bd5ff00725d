//! `siftdb-raft`: run a node of the replicated KV service, or talk to a cluster.
//! `siftdb-raft help` prints the usage.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use siftdb_openraft::client::Client;
use siftdb_openraft::service::{run_node, NodeConfig, StoreKind};
use siftdb_openraft::tls::{Security, SecurityOptions};
use siftdb_openraft::{NodeId, Request};

/// The client commands' TLS and secret settings, from their flags.
static SECURITY: std::sync::OnceLock<Security> = std::sync::OnceLock::new();

/// A client of `addrs` with the command line's TLS and secret settings.
fn client(addrs: Vec<String>) -> Client {
    Client::with_security(addrs, SECURITY.get().expect("set before any client command"))
}

const USAGE: &str = "\
usage:
  siftdb-raft node --id N --addr HOST:PORT --dir DIR [--snapshot-every ENTRIES]
                   [--store siftdb|rocksdb]   (rocksdb: built with --features rocksdb-peer)
                   [--tls-cert PEM --tls-key PEM --tls-ca PEM [--mtls on]] [--secret-file FILE]
every other command takes [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] [--secret-file FILE]
  to talk to nodes that serve TLS (with --mtls: the client certificate) or demand the secret
  siftdb-raft init --addr HOST:PORT --members ID=HOST:PORT,ID=HOST:PORT,...
  siftdb-raft put --addrs A,B,... [--encoding utf8|hex] KEY VALUE
  siftdb-raft get --addrs A,B,... [--encoding utf8|hex] KEY   (linearizable, through read_index)
  siftdb-raft delete --addrs A,B,... [--encoding utf8|hex] KEY
                   (--encoding hex: keys and values are given and printed as hex, any bytes)
  siftdb-raft add-learner --addrs A,B,... ID HOST:PORT   (returns once it caught up)
  siftdb-raft promote --addrs A,B,... ID       (makes a learner a voter)
  siftdb-raft metrics --addr HOST:PORT
  siftdb-raft snapshot --addr HOST:PORT        (builds a snapshot there, purges the log up to it)
  siftdb-raft bench --addrs A,B,... --op write|read --clients N --seconds S [--keys K]
                    [--value-size BYTES]
  siftdb-raft load --addrs A,B,... --bytes B [--value-size BYTES] [--clients N]
                   (writes distinct keys until B bytes of values were acknowledged)";

/// Flags (`--name value`) and positional arguments of one command line.
struct Args {
    flags: BTreeMap<String, String>,
    positional: Vec<String>,
}

impl Args {
    fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
        let mut flags = BTreeMap::new();
        let mut positional = Vec::new();
        let mut args = args.peekable();
        while let Some(a) = args.next() {
            if let Some(name) = a.strip_prefix("--") {
                let value = args.next().ok_or(format!("flag --{name} needs a value"))?;
                if flags.insert(name.to_string(), value).is_some() {
                    return Err(format!("flag --{name} given twice"));
                }
            } else {
                positional.push(a);
            }
        }
        Ok(Args { flags, positional })
    }

    fn flag(&mut self, name: &str) -> Result<String, String> {
        self.flags.remove(name).ok_or(format!("missing --{name}"))
    }

    fn number<T: std::str::FromStr>(
        &mut self,
        name: &str,
        default: Option<T>,
    ) -> Result<T, String> {
        match (self.flags.remove(name), default) {
            (Some(v), _) => v.parse().map_err(|_| format!("--{name} {v}: not a valid number")),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(format!("missing --{name}")),
        }
    }

    fn addrs(&mut self) -> Result<Vec<String>, String> {
        Ok(self.flag("addrs")?.split(',').map(str::to_string).collect())
    }

    /// Fails on flags or positional arguments nobody asked for; `want` positional ones.
    fn finish(self, want: usize) -> Result<Vec<String>, String> {
        if let Some(name) = self.flags.keys().next() {
            return Err(format!("unknown flag --{name}"));
        }
        if self.positional.len() != want {
            return Err(format!(
                "expected {want} arguments, got {}: {:?}",
                self.positional.len(),
                self.positional
            ));
        }
        Ok(self.positional)
    }
}

fn main() -> ExitCode {
    raise_open_file_limit();
    let mut argv = std::env::args().skip(1);
    let Some(cmd) = argv.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if cmd == "help" || cmd == "--help" {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match Args::parse(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("siftdb-raft: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    match runtime.block_on(run(&cmd, args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("siftdb-raft {cmd}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The TLS and secret flags (`--mtls` only for a node).
fn security_options(a: &mut Args, node: bool) -> Result<SecurityOptions, String> {
    let mtls = match a.flags.remove("mtls").as_deref() {
        None | Some("off") => false,
        Some("on") if node => true,
        Some(other) if node => return Err(format!("--mtls {other}: expected on or off")),
        Some(_) => return Err("--mtls is a node flag".into()),
    };
    Ok(SecurityOptions {
        cert: a.flags.remove("tls-cert").map(PathBuf::from),
        key: a.flags.remove("tls-key").map(PathBuf::from),
        ca: a.flags.remove("tls-ca").map(PathBuf::from),
        mtls,
        secret_file: a.flags.remove("secret-file").map(PathBuf::from),
    })
}

async fn run(cmd: &str, mut a: Args) -> Result<(), String> {
    if cmd != "node" {
        let security = security_options(&mut a, false)?.client().map_err(|e| e.to_string())?;
        SECURITY.set(security).expect("set once");
    }
    match cmd {
        "node" => {
            let cfg = NodeConfig {
                id: a.number("id", None)?,
                addr: a.flag("addr")?,
                dir: PathBuf::from(a.flag("dir")?),
                snapshot_every: a.number("snapshot-every", Some(10_000))?,
                security: security_options(&mut a, true)?.node().map_err(|e| e.to_string())?,
                store: match a.flags.remove("store").as_deref() {
                    None | Some("siftdb") => StoreKind::Siftdb,
                    Some("rocksdb") => StoreKind::Rocksdb,
                    Some(other) => {
                        return Err(format!("--store {other}: expected siftdb or rocksdb"))
                    }
                },
            };
            if cfg.snapshot_every < 2 {
                return Err("--snapshot-every must be at least 2".into());
            }
            a.finish(0)?;
            run_node(cfg).await.map_err(|e| e.to_string())
        }
        "init" => {
            let addr = a.flag("addr")?;
            let mut members = BTreeMap::new();
            for m in a.flag("members")?.split(',') {
                let (id, at) =
                    m.split_once('=').ok_or(format!("--members: '{m}' is not ID=HOST:PORT"))?;
                let id: NodeId =
                    id.parse().map_err(|_| format!("--members: '{id}' is not a node id"))?;
                members.insert(id, at.to_string());
            }
            a.finish(0)?;
            client(vec![addr.clone()]).init(&addr, &members).await
        }
        "put" | "delete" | "get" => {
            let client = client(a.addrs()?);
            let hex = match a.flags.remove("encoding").as_deref() {
                None | Some("utf8") => false,
                Some("hex") => true,
                Some(other) => return Err(format!("--encoding {other}: expected utf8 or hex")),
            };
            let want = if cmd == "put" { 2 } else { 1 };
            let mut p = a.finish(want)?;
            let arg = |s: String, what: &str| -> Result<Vec<u8>, String> {
                if hex {
                    from_hex(&s).map_err(|e| format!("{what} {s:?}: {e}"))
                } else {
                    Ok(s.into_bytes())
                }
            };
            let key = arg(p.remove(0), "key")?;
            let req = match cmd {
                "put" => Request::set(key, arg(p.remove(0), "value")?),
                "delete" => Request::delete(key),
                _ => {
                    match client.read(&key).await? {
                        Some(v) => println!("{}", show(&v, hex)?),
                        None => println!("(absent)"),
                    }
                    return Ok(());
                }
            };
            let r = client.write(&req).await?;
            let previous = match &r.previous {
                Some(v) if hex => to_hex(v),
                Some(v) => v.escape_ascii().to_string(),
                None => "absent".into(),
            };
            println!("ok (previous: {previous})");
            Ok(())
        }
        "add-learner" => {
            let mut client = client(a.addrs()?);
            // The leader answers once the learner caught up: by snapshot, a large state takes
            // longer than the default 3 s attempt and 30 s call (as `snapshot` waits its build).
            client.attempt_timeout = Duration::from_secs(3600);
            client.call_timeout = Duration::from_secs(3600);
            let p = a.finish(2)?;
            let id: NodeId = p[0].parse().map_err(|_| format!("'{}' is not a node id", p[0]))?;
            let log_id = client.add_learner(id, &p[1]).await?;
            println!("node {id} is a learner (log {log_id})");
            Ok(())
        }
        "promote" => {
            let addrs = a.addrs()?;
            let client = client(addrs.clone());
            let p = a.finish(1)?;
            let id: NodeId = p[0].parse().map_err(|_| format!("'{}' is not a node id", p[0]))?;
            let m = client.metrics(&addrs[0]).await?;
            let mut voters: BTreeSet<NodeId> =
                m.membership_config.membership().voter_ids().collect();
            if !m.membership_config.membership().learner_ids().any(|l| l == id)
                && !voters.contains(&id)
            {
                return Err(format!(
                    "node {id} is neither a learner nor a voter; add it with add-learner first"
                ));
            }
            voters.insert(id);
            let log_id = client.change_membership(&voters).await?;
            println!("voters are now {voters:?} (log {log_id})");
            Ok(())
        }
        "metrics" => {
            let addr = a.flag("addr")?;
            a.finish(0)?;
            let m = client(vec![addr.clone()]).metrics(&addr).await?;
            println!("{}", serde_json::to_string_pretty(&m).map_err(|e| e.to_string())?);
            Ok(())
        }
        "snapshot" => {
            let addr = a.flag("addr")?;
            a.finish(0)?;
            match client(vec![addr.clone()]).snapshot(&addr).await? {
                Some(log_id) => println!("snapshot at {log_id}; log purged up to it"),
                None => println!("nothing applied: no snapshot"),
            }
            Ok(())
        }
        "bench" => bench(a).await,
        "load" => load(a).await,
        other => Err(format!("unknown command '{other}'\n{USAGE}")),
    }
}

/// Raises the soft limit on open files to the hard one. A snapshot being sent holds a
/// descriptor on each of its tables (one per 64 MiB of state: docs/snapshots.md, "Costs and
/// limits"), per follower it is sent to, beside the database's own tables; the usual soft
/// limit of 1,024 would cap the state a node can send at about 60 GiB.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: both calls get a pointer to a valid, initialised `rlimit` and touch nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// `--clients` concurrent clients each issuing one request at a time for `--seconds`.
async fn bench(mut a: Args) -> Result<(), String> {
    let addrs = a.addrs()?;
    let op = a.flag("op")?;
    let clients: usize = a.number("clients", None)?;
    let seconds: f64 = a.number("seconds", None)?;
    let keys: u64 = a.number("keys", Some(100_000))?;
    let value_size: usize = a.number("value-size", Some(0))?;
    a.finish(0)?;
    if op != "write" && op != "read" {
        return Err(format!("--op {op}: expected write or read"));
    }
    if clients == 0 || seconds.is_nan() || seconds <= 0.0 || keys == 0 {
        return Err("--clients, --seconds and --keys must be positive".into());
    }
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients as u64 {
        let client = client(addrs.clone());
        let (done, failed, op) = (done.clone(), failed.clone(), op.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = c;
            while Instant::now() < deadline {
                let key = format!("bench{:08}", i % keys);
                let ok = if op == "write" {
                    let value = bench_value(i, value_size);
                    client.write(&Request::set(key, value)).await.is_ok()
                } else {
                    client.read(key.as_bytes()).await.is_ok()
                };
                let counter = if ok { &done } else { &failed };
                counter.fetch_add(1, Ordering::Relaxed);
                i += clients as u64;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())?;
    }
    let secs = start.elapsed().as_secs_f64();
    let n = done.load(Ordering::Relaxed);
    println!(
        "{op} clients={clients} ops={n} failed={} seconds={secs:.2} ops_per_sec={:.0}",
        failed.load(Ordering::Relaxed),
        n as f64 / secs
    );
    Ok(())
}

/// The value of write `i`: `v<i>`, padded with `:` and filler to `size` bytes when `size` is
/// larger. The filler is pseudo-random letters (splitmix64 of `i`), so it does not compress away.
fn bench_value(i: u64, size: usize) -> String {
    let mut v = format!("v{i}");
    if v.len() >= size {
        return v;
    }
    v.push(':');
    let mut x = i;
    while v.len() < size {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        for b in z.to_le_bytes() {
            if v.len() < size {
                v.push(char::from(b'a' + b % 26));
            }
        }
    }
    v
}

/// `--clients` concurrent clients writing distinct keys `load<n>` with values of `--value-size`
/// bytes until `--bytes` bytes of values were acknowledged: a quick way to give a cluster a
/// large state. Every write must succeed (the client retries through leader changes).
async fn load(mut a: Args) -> Result<(), String> {
    let addrs = a.addrs()?;
    let bytes: u64 = a.number("bytes", None)?;
    let value_size: usize = a.number("value-size", Some(64 << 10))?;
    let clients: u64 = a.number("clients", Some(8))?;
    a.finish(0)?;
    if value_size == 0 || clients == 0 {
        return Err("--value-size and --clients must be positive".into());
    }
    let writes = bytes.div_ceil(value_size as u64);
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let client = client(addrs.clone());
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= writes {
                    return Ok::<(), String>(());
                }
                let req = Request::set(format!("load{n:010}"), bench_value(n, value_size));
                client.write(&req).await.map_err(|e| format!("write {n}: {e}"))?;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    let secs = start.elapsed().as_secs_f64();
    let total = writes * value_size as u64;
    println!(
        "load writes={writes} value_bytes={total} seconds={secs:.2} mb_per_sec={:.1}",
        total as f64 / secs / 1e6
    );
    Ok(())
}

/// The bytes of a hex string (two digits a byte, either case).
fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    let digit = |c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!("{:?} is not a hex digit", char::from(c))),
        }
    };
    s.as_bytes()
        .chunks(2)
        .map(|p| match p {
            [hi, lo] => Ok(digit(*hi)? << 4 | digit(*lo)?),
            _ => Err("odd number of hex digits".into()),
        })
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A value as `get` prints it: hex, or the text, refused when it is not UTF-8.
fn show(v: &[u8], hex: bool) -> Result<String, String> {
    if hex {
        return Ok(to_hex(v));
    }
    String::from_utf8(v.to_vec()).map_err(|_| {
        format!("the value ({} bytes) is not UTF-8: read it with --encoding hex", v.len())
    })
}
