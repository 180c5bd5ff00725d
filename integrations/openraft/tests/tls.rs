//! TLS between nodes and for clients (mutual TLS and the shared secret on): a 3-node cluster
//! elects a leader, replicates and sends a new node a snapshot over TLS; a client that trusts
//! another CA, one without a client certificate and one without the secret are refused; bad
//! flag combinations stop a node at start-up with what is wrong. Certificates are made by rcgen
//! in the test's temporary directory.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{leader, wait_until_serving, NodeProc, BIN};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use siftdb_openraft::client::Client;
use siftdb_openraft::tls::{Security, SecurityOptions};
use siftdb_openraft::Request;

struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

/// A CA and a certificate it signs for 127.0.0.1 (server and client use), as PEM files.
fn make_pki(dir: &Path, name: &str) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, format!("{name} CA"));
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    leaf.extended_key_usages =
        vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &ca_cert, &ca_key).unwrap();
    let pki = Pki {
        ca: dir.join(format!("{name}-ca.pem")),
        cert: dir.join(format!("{name}-cert.pem")),
        key: dir.join(format!("{name}-key.pem")),
    };
    std::fs::write(&pki.ca, ca_cert.pem()).unwrap();
    std::fs::write(&pki.cert, cert.pem()).unwrap();
    std::fs::write(&pki.key, key.serialize_pem()).unwrap();
    pki
}

fn node_args(pki: &Pki, secret: &Path) -> Vec<String> {
    let p = |p: &Path| p.to_str().unwrap().to_string();
    vec![
        "--tls-cert".into(),
        p(&pki.cert),
        "--tls-key".into(),
        p(&pki.key),
        "--tls-ca".into(),
        p(&pki.ca),
        "--mtls".into(),
        "on".into(),
        "--secret-file".into(),
        p(secret),
    ]
}

fn client_security(ca: &Path, cert: Option<&Pki>, secret: Option<&Path>) -> Security {
    SecurityOptions {
        cert: cert.map(|p| p.cert.clone()),
        key: cert.map(|p| p.key.clone()),
        ca: Some(ca.to_path_buf()),
        mtls: false,
        secret_file: secret.map(Path::to_path_buf),
    }
    .client()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_replicates_installs_a_snapshot_and_refuses_strangers() {
    let root = tempfile::tempdir().unwrap();
    let pki = make_pki(root.path(), "cluster");
    let other = make_pki(root.path(), "other");
    let secret = root.path().join("secret");
    std::fs::write(&secret, "correct horse battery staple\n").unwrap();
    let mut nodes: Vec<NodeProc> =
        (1..=4).map(|id| NodeProc::new(id, root.path(), 10_000)).collect();
    for n in &mut nodes {
        n.args = node_args(&pki, &secret);
    }
    for n in &mut nodes[..3] {
        n.start();
    }
    let addrs: Vec<String> = nodes[..3].iter().map(|n| n.addr.clone()).collect();
    let admin =
        Client::with_security(addrs.clone(), &client_security(&pki.ca, Some(&pki), Some(&secret)));
    wait_until_serving(&admin, &nodes).await;
    let members = nodes[..3].iter().map(|n| (n.id, n.addr.clone())).collect();
    admin.init(&addrs[0], &members).await.expect("the cluster initializes over TLS");
    let l = leader(&admin, &nodes).await;
    let leader_addr = nodes[l as usize - 1].addr.clone();
    for n in 0..50u32 {
        admin.write(&Request::set(format!("k{n:02}"), n.to_le_bytes().to_vec())).await.unwrap();
    }
    assert_eq!(admin.read(b"k07").await.unwrap(), Some(7u32.to_le_bytes().to_vec()));
    // Every voter applies the writes (replication over TLS).
    let want = admin.dump(&leader_addr).await.unwrap();
    assert_eq!(want.len(), 50);
    let deadline = Instant::now() + Duration::from_secs(30);
    for a in &addrs {
        while admin.dump(a).await.unwrap() != want {
            assert!(Instant::now() < deadline, "{a} did not replicate in 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // A new node is sent the snapshot, one streamed body, over TLS and with the secret.
    admin.snapshot(&leader_addr).await.unwrap().expect("a snapshot was built");
    nodes[3].start();
    wait_until_serving(&admin, &nodes).await;
    admin.add_learner(4, &nodes[3].addr).await.expect("node 4 joins over TLS");
    let a4 = nodes[3].addr.clone();
    while admin.dump(&a4).await.unwrap() != want {
        assert!(Instant::now() < deadline, "node 4 did not catch up in 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(admin.metrics(&a4).await.unwrap().snapshot.is_some(), "node 4 installed a snapshot");

    // A client trusting another CA: the handshake fails on the server's certificate.
    let stranger = Client::with_security(
        vec![leader_addr.clone()],
        &client_security(&other.ca, Some(&pki), Some(&secret)),
    );
    let e = stranger.metrics(&leader_addr).await.unwrap_err();
    assert!(e.contains("invalid peer certificate: UnknownIssuer"), "{e}");
    let mut quick = Client::with_security(
        vec![leader_addr.clone()],
        &client_security(&other.ca, Some(&pki), Some(&secret)),
    );
    quick.call_timeout = Duration::from_millis(300);
    assert!(quick.write(&Request::set("x", "y")).await.is_err());
    // No client certificate: the node's handshake refuses it.
    let no_cert = client_security(&pki.ca, None, Some(&secret)).http_client();
    let r = no_cert.get(format!("https://{leader_addr}/cluster/metrics")).send().await;
    assert!(r.is_err(), "a client without a certificate was served: {r:?}");
    // A certificate signed by another CA: refused likewise.
    let other_cert = client_security(&pki.ca, Some(&other), Some(&secret)).http_client();
    let r = other_cert.get(format!("https://{leader_addr}/cluster/metrics")).send().await;
    assert!(r.is_err(), "a client certificate of another CA was served: {r:?}");
    // Plain HTTP to a TLS node: no answer.
    assert!(Client::new(vec![leader_addr.clone()]).metrics(&leader_addr).await.is_err());
    // The right certificate without the secret, or with a wrong one: HTTP 401, nothing proposed.
    let applied = admin.metrics(&leader_addr).await.unwrap().last_applied;
    let no_secret = client_security(&pki.ca, Some(&pki), None).http_client();
    let wrong = root.path().join("wrong");
    std::fs::write(&wrong, "wrong").unwrap();
    let wrong_secret = client_security(&pki.ca, Some(&pki), Some(&wrong)).http_client();
    for http in [no_secret, wrong_secret] {
        for route in ["/kv/write", "/raft/append", "/raft/vote", "/raft/snapshot", "/cluster/init"]
        {
            let r = http
                .post(format!("https://{leader_addr}{route}"))
                .header("content-type", "application/json")
                .body(r#"{"Set":{"key":"x","value":"y"}}"#)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 401, "{route}");
            assert!(r.text().await.unwrap().contains("secret"), "{route}");
        }
    }
    assert_eq!(admin.metrics(&leader_addr).await.unwrap().last_applied, applied);
    assert_eq!(admin.read(b"x").await.unwrap(), None);
}

/// `siftdb-raft node` with these extra flags: its exit status and stderr.
fn node_start(dir: &Path, extra: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["node", "--id", "1", "--addr", "127.0.0.1:1"])
        .arg("--dir")
        .arg(dir.join("n"))
        .args(extra)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_tls_flags_stop_the_node_at_start_up_with_what_is_wrong() {
    let root = tempfile::tempdir().unwrap();
    let pki = make_pki(root.path(), "c");
    let (cert, key, ca) =
        (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap(), pki.ca.to_str().unwrap());
    let missing = root.path().join("no-such.pem");
    let missing = missing.to_str().unwrap();
    let garbage = root.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let garbage = garbage.to_str().unwrap();
    let empty = root.path().join("empty");
    std::fs::write(&empty, " \n").unwrap();
    let empty = empty.to_str().unwrap();
    for (flags, want) in [
        (vec!["--tls-cert", cert], "--tls-cert needs --tls-key"),
        (vec!["--tls-key", key], "--tls-key needs --tls-cert"),
        (vec!["--tls-cert", cert, "--tls-key", key], "TLS needs --tls-ca"),
        (vec!["--mtls", "on"], "--mtls needs --tls-ca"),
        (vec!["--tls-ca", ca], "a TLS node needs --tls-cert and --tls-key"),
        (vec!["--tls-cert", missing, "--tls-key", key, "--tls-ca", ca], "cannot read"),
        (vec!["--tls-cert", garbage, "--tls-key", key, "--tls-ca", ca], "holds no PEM certificate"),
        (
            vec!["--tls-cert", cert, "--tls-key", garbage, "--tls-ca", ca],
            "holds no PEM private key",
        ),
        (vec!["--tls-cert", cert, "--tls-key", cert, "--tls-ca", ca], "--tls-key"),
        (vec!["--tls-cert", cert, "--tls-key", key, "--tls-ca", key], "--tls-ca"),
        (vec!["--secret-file", missing], "--secret-file"),
        (vec!["--secret-file", empty], "the secret is empty"),
        (vec!["--mtls", "yes"], "--mtls yes: expected on or off"),
    ] {
        let (ok, stderr) = node_start(root.path(), &flags);
        assert!(!ok, "{flags:?} started");
        assert!(stderr.contains(want), "{flags:?}: {stderr}");
    }
    // Nothing was created for a refused start.
    assert!(!root.path().join("n").exists());
}
