//! Round trips at every table size, blocking limit and acknowledgment timing; encoder-stream
//! bytes split at every byte; eviction under pressure; no blocking when not allowed; a zero
//! capacity; secrets never indexed, credentials indexed within their cap.

use super::*;

#[derive(Clone, Copy, Debug)]
enum Acks {
    Immediate,
    Late,
    Never,
}

/// Encodes `sections` lists, delivering encoder-stream bytes in random pieces, sometimes
/// after the sections that need them; checks every list decodes back.
fn round_trip(capacity: u64, blocked: u64, acks: Acks, seed: u64) {
    let mut rng = Rng(seed);
    let mut p = Peers::new(capacity, blocked);
    let mut waiting: Vec<(u64, List)> = Vec::new();
    for i in 0..200u64 {
        let stream = i * 4;
        let list = random_list(&mut rng);
        let section = p.encode(stream, &list);
        // Deliver a random part of the encoder stream before the section.
        let part = rng.below_usize(p.to_decoder.len() + 1);
        p.deliver_encoder(part);
        match p.dec.decode(stream, &section).unwrap() {
            Decoded::Fields(lines) => assert_eq!(decoded_pairs(lines), as_lines(&list)),
            Decoded::Blocked => waiting.push((stream, list)),
        }
        if rng.percent(30) || waiting.len() as u64 >= blocked {
            let all = p.to_decoder.len();
            p.deliver_encoder(all);
        }
        while let Some((id, result)) = p.dec.take_unblocked() {
            let idx = waiting
                .iter()
                .position(|(s, _)| *s == id)
                .expect("was blocked");
            let (_, list) = waiting.remove(idx);
            assert_eq!(decoded_pairs(result.unwrap()), list);
        }
        match acks {
            Acks::Immediate => p.acknowledge(),
            Acks::Late if i % 17 == 16 => p.acknowledge(),
            _ => {}
        }
        assert!(
            p.dec.memory_usage()
                <= capacity as usize + 64 * 1024 * blocked as usize + 8 * capacity as usize + 32
        );
    }
    let all = p.to_decoder.len();
    p.deliver_encoder(all);
    while let Some((id, result)) = p.dec.take_unblocked() {
        let idx = waiting.iter().position(|(s, _)| *s == id).unwrap();
        assert_eq!(decoded_pairs(result.unwrap()), waiting.remove(idx).1);
    }
    assert!(
        waiting.is_empty(),
        "{} sections still blocked",
        waiting.len()
    );
}

#[test]
fn round_trips_at_every_table_size_blocking_limit_and_ack_timing() {
    for capacity in [0, 256, 4096, 65536] {
        for blocked in [0, 100] {
            for acks in [Acks::Immediate, Acks::Late, Acks::Never] {
                for seed in 1..=3 {
                    round_trip(capacity, blocked, acks, capacity ^ (blocked << 20) ^ seed);
                }
            }
        }
    }
}

/// Sections first, then the encoder stream one byte at a time: each section comes out once
/// the last insert it needs has arrived, not before.
#[test]
fn encoder_stream_split_at_every_byte_releases_blocked_sections() {
    let mut p = Peers::new(4096, 100);
    let lists: Vec<Vec<(Vec<u8>, Vec<u8>)>> = (0..5)
        .map(|i| {
            vec![
                (
                    b":authority".to_vec(),
                    format!("host{i}.example").into_bytes(),
                ),
                (b"user-agent".to_vec(), b"agent/1.0".to_vec()),
                (
                    b"cookie".to_vec(),
                    format!("session-id-of-some-length-{i}").into_bytes(),
                ),
            ]
        })
        .collect();
    let sections: Vec<Vec<u8>> = lists
        .iter()
        .enumerate()
        .map(|(i, l)| p.encode(i as u64 * 4, l))
        .collect();
    for (i, s) in sections.iter().enumerate() {
        assert_eq!(p.dec.decode(i as u64 * 4, s).unwrap(), Decoded::Blocked);
    }
    let mut released = Vec::new();
    while !p.to_decoder.is_empty() {
        p.deliver_encoder(1);
        while let Some((id, r)) = p.dec.take_unblocked() {
            released.push(id);
            assert_eq!(decoded_pairs(r.unwrap()), lists[(id / 4) as usize]);
        }
    }
    released.sort_unstable();
    assert_eq!(released, [0, 4, 8, 12, 16]);
}

/// A small table, many distinct lines, acknowledgments late: entries referenced by
/// unacknowledged sections are never evicted (the decoder would fail), and the table keeps
/// being used.
#[test]
fn eviction_under_pressure_keeps_every_section_decodable() {
    let mut p = Peers::new(256, 100);
    let mut rng = Rng(99);
    let mut pending: Vec<(u64, Vec<u8>, List)> = Vec::new();
    for i in 0..300u64 {
        let list: Vec<(Vec<u8>, Vec<u8>)> = (0..4)
            .map(|_| {
                (
                    b"cookie".to_vec(),
                    format!("crumb-{:04}-xxxxxxxxxxxxxxx", rng.below(40)).into_bytes(),
                )
            })
            .collect();
        let section = p.encode(i * 4, &list);
        pending.push((i * 4, section, list));
        if i % 5 == 4 {
            let all = p.to_decoder.len();
            p.deliver_encoder(all);
            for (id, section, list) in pending.drain(..) {
                assert_eq!(
                    decoded_pairs(fields(p.dec.decode(id, &section).unwrap())),
                    list
                );
            }
            p.acknowledge();
        }
        assert!(p.enc.table().size() <= 256);
    }
    assert!(
        p.enc.table().insert_count() > 20,
        "the table was used: {}",
        p.enc.table().insert_count()
    );
}

/// Without the peer's permission to block, no section references an unacknowledged entry:
/// every section decodes at once even when the encoder stream is held back.
#[test]
fn no_blocking_allowed_means_no_section_blocks() {
    let mut p = Peers::new(4096, 0);
    let mut rng = Rng(5);
    for i in 0..100u64 {
        let list = random_list(&mut rng);
        let section = p.encode(i * 4, &list);
        assert_eq!(
            decoded_pairs(fields(p.dec.decode(i * 4, &section).unwrap())),
            list
        );
        if i % 10 == 9 {
            let all = p.to_decoder.len();
            p.deliver_encoder(all);
            p.acknowledge();
        }
    }
}

/// A zero capacity from the peer: static table only, no encoder-stream bytes at all.
#[test]
fn zero_capacity_uses_no_dynamic_table() {
    let mut p = Peers::new(0, 100);
    let mut rng = Rng(8);
    for i in 0..50 {
        let list = random_list(&mut rng);
        let section = p.encode(i * 4, &list);
        assert_eq!(section[0], 0, "Required Insert Count 0");
        assert_eq!(
            decoded_pairs(fields(p.dec.decode(i * 4, &section).unwrap())),
            list
        );
    }
    assert!(p.to_decoder.is_empty());
}

/// Secrets that could be guessed go out as never-indexed literals and are not inserted.
#[test]
fn secrets_are_never_indexed() {
    let mut p = Peers::new(4096, 100);
    let list = vec![
        (b"authorization".to_vec(), b"Bearer abc123".to_vec()),
        (b"cookie".to_vec(), b"sid=12345".to_vec()),
        (
            b"cookie".to_vec(),
            b"long-analytics-id=0123456789abcdef".to_vec(),
        ),
        (b"set-cookie".to_vec(), [b'x'; 100].to_vec()),
    ];
    for i in 0..3 {
        let section = p.encode(i * 4, &list);
        let all = p.to_decoder.len();
        p.deliver_encoder(all);
        let lines = fields(p.dec.decode(i * 4, &section).unwrap());
        let never: Vec<bool> = lines.iter().map(|l| l.never_indexed).collect();
        assert_eq!(never, [true, true, false, true]);
        p.acknowledge();
    }
    let t = p.enc.table();
    for abs in t.oldest()..t.insert_count() {
        let e = t.get(abs).unwrap();
        assert!(
            e.name != b"authorization" && e.name != b"set-cookie" && e.value != b"sid=12345",
            "{e:?}"
        );
    }
}

/// The entries of `name` in the encoder's table.
fn entries_named(p: &Peers, name: &[u8]) -> Vec<Vec<u8>> {
    let t = p.enc.table();
    (t.oldest()..t.insert_count())
        .filter_map(|abs| t.get(abs))
        .filter(|e| e.name == name)
        .map(|e| e.value.clone())
        .collect()
}

/// A bearer token too long to guess, sent on every request, is inserted once and then
/// referenced: a probe must guess all of it (RFC 9204 §7.1.1).
#[test]
fn a_long_repeated_credential_is_inserted_once_and_referenced() {
    let mut p = Peers::new(4096, 100);
    let token = format!("Bearer {}", "eyJhbGciOiJSUzI1NiJ9.".repeat(9));
    let literal = token.len();
    let mut sizes = Vec::new();
    for i in 0..10u64 {
        let list = vec![
            (b":path".to_vec(), format!("/v1/items/{i}").into_bytes()),
            (b"authorization".to_vec(), token.clone().into_bytes()),
        ];
        let section = p.encode(i * 4, &list);
        p.deliver_encoder(usize::MAX);
        let lines = fields(p.dec.decode(i * 4, &section).unwrap());
        assert_eq!(decoded_pairs(lines.clone()), list);
        assert!(!lines[1].never_indexed);
        p.acknowledge();
        sizes.push(section.len());
    }
    assert_eq!(entries_named(&p, b"authorization"), [token.into_bytes()]);
    assert_eq!(p.enc.table().insert_count(), 1, "only the token");
    assert!(
        sizes[2..].iter().all(|&s| s < literal / 4),
        "referenced, not sent: {sizes:?}"
    );
}

/// At most four distinct credential values are inserted per connection: the fifth goes out
/// as a never-indexed literal however often it is sent, while the four stay referenced.
#[test]
fn distinct_credential_values_are_capped() {
    let mut p = Peers::new(4096, 100);
    let token = |k: u64| format!("Bearer token-{k}-0123456789abcdefghij").into_bytes();
    let mut stream = 0;
    for k in 0..6u64 {
        for _ in 0..4 {
            let list = vec![(b"authorization".to_vec(), token(k))];
            let section = p.encode(stream, &list);
            p.deliver_encoder(usize::MAX);
            let lines = fields(p.dec.decode(stream, &section).unwrap());
            assert_eq!(decoded_pairs(lines.clone()), list);
            assert_eq!(lines[0].never_indexed, k >= 4, "token {k}");
            p.acknowledge();
            stream += 4;
        }
    }
    let inserted = entries_named(&p, b"authorization");
    assert_eq!(inserted, (0..4).map(token).collect::<Vec<_>>());
    // The first token is still referenced, not sent again.
    let list = vec![(b"authorization".to_vec(), token(0))];
    let section = p.encode(stream, &list);
    p.deliver_encoder(usize::MAX);
    assert!(section.len() < 6, "{section:?}");
    assert!(!fields(p.dec.decode(stream, &section).unwrap())[0].never_indexed);
}

/// A decoder that never acknowledges, and sections that may not block: the insertions are
/// never usable, so once they have waited 16 sections the encoder inserts nothing more, until
/// an acknowledgment comes.
#[test]
fn insertions_stop_while_the_decoder_acknowledges_none() {
    let mut p = Peers::new(4096, 0);
    let mut rng = Rng(12);
    let mut inserts = Vec::new();
    for i in 0..60u64 {
        let list = random_list(&mut rng);
        let section = p.encode(i * 4, &list);
        p.deliver_encoder(usize::MAX);
        let decoded = fields(p.dec.decode(i * 4, &section).unwrap());
        assert_eq!(decoded_pairs(decoded), list);
        inserts.push(p.enc.table().insert_count());
    }
    assert!(inserts[10] > 0, "the table was used at first");
    assert_eq!(
        inserts[20], inserts[59],
        "then no more insertions: {inserts:?}"
    );
    p.acknowledge();
    for i in 60..80u64 {
        let list = random_list(&mut rng);
        let section = p.encode(i * 4, &list);
        p.deliver_encoder(usize::MAX);
        assert_eq!(
            decoded_pairs(fields(p.dec.decode(i * 4, &section).unwrap())),
            list
        );
        p.acknowledge();
    }
    assert!(
        p.enc.table().insert_count() > inserts[59],
        "insertions resume"
    );
}
