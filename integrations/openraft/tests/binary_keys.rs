//! Keys and values are any bytes through the client API: every byte value, bytes that are not
//! UTF-8, empty values and a value near the largest write, written to a 3-node cluster, read
//! back linearizably, and read from a 4th node that caught up by snapshot. Bodies that do not
//! decode are answered HTTP 400 (a body past the limit 413) before anything is proposed.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{leader, wait_until_serving, NodeProc};
use siftdb_openraft::client::{Client, Outcome};
use siftdb_openraft::kv_wire;
use siftdb_openraft::service::KV_WRITE_BODY_LIMIT;
use siftdb_openraft::Request;

/// Bytes from a seeded splitmix64 stream: random-looking, almost never UTF-8.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The pairs the test writes, by key.
fn pairs() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    // Each byte value alone as a key (0x00 and 0xff included), its value that byte, then 0x00.
    for b in 0..=255u8 {
        m.insert(vec![b], vec![b, 0x00]);
    }
    let every: Vec<u8> = (0..=255u8).collect();
    // Every byte value in one key; invalid UTF-8 values: a lone continuation byte, an overlong
    // encoding, a truncated sequence, a surrogate.
    m.insert(every.clone(), vec![0x80]);
    m.insert(b"overlong".to_vec(), vec![0xc0, 0xaf]);
    m.insert(b"truncated".to_vec(), vec![0xe2, 0x82]);
    m.insert(b"surrogate".to_vec(), vec![0xed, 0xa0, 0x80]);
    m.insert(vec![0xff, 0xfe, 0x00], Vec::new());
    m.insert(Vec::new(), b"the empty key".to_vec());
    // A value near the largest write: the body holds the format byte, the request tag, two
    // lengths and the key.
    let key = b"large".to_vec();
    let large = KV_WRITE_BODY_LIMIT - (1 + 1 + 4 + key.len() + 4) - 16;
    m.insert(key, noise(7, large));
    m
}

async fn raw_post(route: &str, addr: &str, content_type: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}{route}"))
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_bytes_round_trip_linearizably_and_through_a_snapshot() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes: Vec<NodeProc> =
        (1..=4).map(|id| NodeProc::new(id, root.path(), 10_000)).collect();
    for n in &mut nodes[..3] {
        n.start();
    }
    let addrs: Vec<String> = nodes[..3].iter().map(|n| n.addr.clone()).collect();
    let admin = Client::new(addrs.clone());
    wait_until_serving(&admin, &nodes).await;
    let members = nodes[..3].iter().map(|n| (n.id, n.addr.clone())).collect();
    admin.init(&addrs[0], &members).await.expect("the cluster initializes");
    let l = leader(&admin, &nodes).await;
    let leader_addr = nodes[l as usize - 1].addr.clone();

    let want = pairs();
    for (k, v) in &want {
        let r = admin.write(&Request::set(k.clone(), v.clone())).await.unwrap();
        assert_eq!(r.previous, None, "key {}", k.escape_ascii());
    }
    // Overwrites answer the previous bytes exactly; a batch of binary writes too.
    let r = admin.write(&Request::set(vec![0xff], vec![0xff, 0x00])).await.unwrap();
    assert_eq!(r.previous, Some(vec![0xff, 0x00]));
    let batch = Request::Batch(vec![
        Request::set(vec![0x00], vec![0x00, 0x00]),
        Request::delete(b"no such key".to_vec()),
        Request::set(vec![0x00], vec![0x00, 0x00]),
    ]);
    let r = admin.write(&batch).await.unwrap();
    let previous: Vec<_> = r.batch.into_iter().map(|r| r.previous).collect();
    assert_eq!(previous, [Some(vec![0x00, 0x00]), None, Some(vec![0x00, 0x00])]);

    for (k, v) in &want {
        assert_eq!(admin.read(k).await.unwrap().as_ref(), Some(v), "key {}", k.escape_ascii());
    }
    assert_eq!(admin.read(b"absent\xff").await.unwrap(), None);
    let dump: BTreeMap<Vec<u8>, Vec<u8>> =
        admin.dump(&leader_addr).await.unwrap().into_iter().collect();
    assert_eq!(dump, want);

    // A new node catches up by snapshot (the log is purged past every write) and holds the
    // same bytes.
    admin.snapshot(&leader_addr).await.unwrap().expect("a snapshot was built");
    nodes[3].start();
    wait_until_serving(&admin, &nodes).await;
    admin.add_learner(4, &nodes[3].addr).await.expect("node 4 joins");
    let a4 = nodes[3].addr.clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    while admin.dump(&a4).await.unwrap() != admin.dump(&leader_addr).await.unwrap() {
        assert!(Instant::now() < deadline, "node 4 did not catch up in 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let m = admin.metrics(&a4).await.unwrap();
    eprintln!(
        "node 4: snapshot {:?}, purged {:?}, applied {:?}",
        m.snapshot, m.purged, m.last_applied
    );
    assert!(m.snapshot.is_some(), "node 4 caught up by snapshot, not by log");
    for (k, v) in &want {
        assert_eq!(admin.local_get(&a4, k).await.unwrap().as_ref(), Some(v));
    }

    // The JSON routes: a UTF-8 value is a string, other bytes {"base64": ...}.
    let (status, body) =
        raw_post("/kv/local", &a4, "application/json", br#"{"base64":"gA=="}"#.to_vec()).await;
    // The key 0x80, whose value is 0x80 0x00.
    assert_eq!(
        (status, String::from_utf8(body).unwrap()),
        (200, r#"{"Ok":{"base64":"gAA="}}"#.into())
    );
    let every = serde_json::to_vec(&serde_json::json!({"base64": base64_of_every_byte()})).unwrap();
    let (status, body) = raw_post("/kv/local", &a4, "application/json", every).await;
    assert_eq!(
        (status, String::from_utf8(body).unwrap()),
        (200, r#"{"Ok":{"base64":"gA=="}}"#.into())
    );
    let (status, body) =
        raw_post("/kv/local", &a4, "application/json", br#""overlong""#.to_vec()).await;
    assert_eq!(
        (status, String::from_utf8(body).unwrap()),
        (200, r#"{"Ok":{"base64":"wK8="}}"#.into())
    );
    let (status, body) = raw_post("/kv/local", &a4, "application/json", b"\"\"".to_vec()).await;
    assert_eq!(
        (status, String::from_utf8(body).unwrap()),
        (200, r#"{"Ok":"the empty key"}"#.into())
    );

    // Bad bodies: 4xx with what is wrong, nothing proposed.
    let applied = admin.metrics(&leader_addr).await.unwrap().last_applied;
    let ct = kv_wire::CONTENT_TYPE;
    let mut truncated =
        kv_wire::encode_write(&Request::set(b"never written".to_vec(), b"value".to_vec()));
    truncated.pop();
    let nested = vec![kv_wire::FORMAT, 2, 1, 0, 0, 0, 2, 0, 0, 0, 0];
    for (route, body, want_text) in [
        ("/kv/write", truncated, "runs past the end"),
        ("/kv/write", vec![kv_wire::FORMAT, 7], "unknown request tag 7"),
        ("/kv/write", vec![9, 0], "unknown format byte 9"),
        ("/kv/write", Vec::new(), "empty body"),
        ("/kv/write", nested, "inside a batch"),
        ("/kv/read", vec![3], "unknown format byte 3"),
        ("/kv/local", Vec::new(), "empty body"),
    ] {
        let (status, text) = raw_post(route, &leader_addr, ct, body).await;
        let text = String::from_utf8_lossy(&text);
        assert_eq!(status, 400, "{route}: {text}");
        assert!(text.contains(want_text), "{route}: {text}");
    }
    for (body, want_text) in [
        (&br#"{"Set":{"key":{"base64":"%%"},"value":""}}"#[..], "base64"),
        (br#"{"Nope":1}"#, "unknown variant"),
        (b"{", "EOF"),
    ] {
        let (status, text) =
            raw_post("/kv/write", &leader_addr, "application/json", body.to_vec()).await;
        let text = String::from_utf8_lossy(&text);
        assert_eq!(status, 400, "{text}");
        assert!(text.contains(want_text), "{text}");
    }
    let long_key = Request::set(vec![1u8; siftdb::MAX_KEY_SIZE + 1], Vec::new());
    match admin.write_once(&leader_addr, &long_key).await {
        Outcome::Refused { why, .. } => assert!(why.contains("exceeds"), "{why}"),
        other => panic!("a key past MAX_KEY_SIZE was not refused: {other:?}"),
    }
    let too_large = Request::set(b"big".to_vec(), noise(8, KV_WRITE_BODY_LIMIT));
    match admin.write_once(&leader_addr, &too_large).await {
        Outcome::Refused { why, .. } => assert!(why.contains("413"), "{why}"),
        other => panic!("a write past the body limit was not refused: {other:?}"),
    }
    assert_eq!(
        admin.metrics(&leader_addr).await.unwrap().last_applied,
        applied,
        "nothing proposed"
    );
    assert_eq!(admin.read(b"never written").await.unwrap(), None);
}

fn base64_of_every_byte() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode((0..=255u8).collect::<Vec<u8>>())
}
