//! What the encoder's strategy achieves on header lists shaped like real traffic.

use super::*;

/// A browser's requests to a news site and the responses: what the strategy is for.
fn browser_corpus() -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let mut rng = Rng(2026);
    let mut lists = Vec::new();
    for i in 0..100 {
        let (path, accept) = match i % 4 {
            0 => (
                format!("/article/{}/story.html", rng.below(1000)),
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            ),
            1 => (
                format!("/static/js/app.{:08x}.js", rng.next() as u32),
                "*/*",
            ),
            2 => (
                format!("/img/{:06}.webp", rng.below(1_000_000)),
                "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
            ),
            _ => (
                format!("/api/v2/feed?page={}", rng.below(50)),
                "application/json",
            ),
        };
        let req = [
            (":method", "GET".to_string()),
            (":scheme", "https".to_string()),
            (":authority", "www.news.example".to_string()),
            (":path", path),
            ("user-agent", ua.to_string()),
            ("accept", accept.to_string()),
            ("accept-encoding", "gzip, deflate, br, zstd".to_string()),
            ("accept-language", "en-US,en;q=0.9,fr;q=0.8".to_string()),
            ("referer", "https://www.news.example/".to_string()),
            ("cookie", "_ga=GA1.2.1234567890.1700000000".to_string()),
            (
                "cookie",
                "session=4f9d2a7c1e8b6d3f0a5c9e2b7d4f1a8c".to_string(),
            ),
            ("cookie", "consent=yes".to_string()),
            ("sec-fetch-site", "same-origin".to_string()),
        ];
        lists.push(
            req.iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.clone().into_bytes()))
                .collect(),
        );
        let resp = [
            (":status", "200".to_string()),
            (
                "content-type",
                [
                    "text/html; charset=utf-8",
                    "application/javascript",
                    "image/webp",
                    "application/json",
                ][i % 4]
                    .to_string(),
            ),
            ("content-length", format!("{}", 1000 + rng.below(90_000))),
            ("cache-control", "public, max-age=300".to_string()),
            ("server", "news-frontend".to_string()),
            (
                "date",
                format!("Tue, 24 Nov 2026 21:{:02}:{:02} GMT", i / 60, i % 60),
            ),
            ("etag", format!("\"{:016x}\"", rng.next())),
            ("vary", "accept-encoding".to_string()),
            (
                "strict-transport-security",
                "max-age=63072000; includeSubDomains".to_string(),
            ),
        ];
        lists.push(
            resp.iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.clone().into_bytes()))
                .collect(),
        );
    }
    lists
}

/// Total bytes (field sections and encoder stream) for the corpus with a table of `capacity`,
/// acknowledgments flowing back after each section.
fn corpus_bytes(capacity: u64) -> usize {
    let mut p = Peers::new(capacity, 100);
    let mut total = 0;
    for (i, list) in browser_corpus().iter().enumerate() {
        let section = p.encode(i as u64 * 4, list);
        total += section.len() + p.to_decoder.len();
        let all = p.to_decoder.len();
        p.deliver_encoder(all);
        assert_eq!(
            decoded_pairs(fields(p.dec.decode(i as u64 * 4, &section).unwrap())),
            *list
        );
        p.acknowledge();
    }
    total
}

#[test]
fn the_dynamic_table_shrinks_a_browsing_session_to_a_third() {
    let static_only = corpus_bytes(0);
    let dynamic = corpus_bytes(4096);
    assert!(
        dynamic * 100 <= static_only * 35,
        "{dynamic} bytes with a 4096-byte table against {static_only} static-only ({:.1} %)",
        dynamic as f64 * 100.0 / static_only as f64
    );
}

/// Per field name, the bytes its lines cost over `lists` (representations and the encoder
/// instructions they caused), with a table of `capacity` and every section acknowledged at
/// once; and the total wire bytes.
fn costs_by_name(capacity: u64, lists: &[List]) -> (Vec<(Vec<u8>, usize)>, usize) {
    let mut p = Peers::new(capacity, 100);
    // Set Dynamic Table Capacity is on no line.
    let opening = p.enc.encoder_stream_pending().to_vec();
    p.enc.encoder_stream_consumed(opening.len());
    p.to_decoder.extend(&opening);
    let mut by_name: Vec<(Vec<u8>, usize)> = Vec::new();
    let mut total = opening.len();
    let mut costs = Vec::new();
    for (i, list) in lists.iter().enumerate() {
        let mut section = Vec::new();
        let iter = list.iter().map(|(n, v)| (&n[..], &v[..]));
        p.enc
            .encode_with_costs(i as u64 * 4, iter, &mut section, &mut costs)
            .unwrap();
        let queued = p.enc.encoder_stream_pending().len();
        // Every byte is on a line but the section prefix (two to four bytes).
        let on_lines: usize = costs.iter().map(|c| c.section + c.encoder_stream).sum();
        let prefix = section.len() + queued - on_lines;
        assert!((2..=4).contains(&prefix), "{prefix}");
        total += section.len() + queued;
        let pending = p.enc.encoder_stream_pending().to_vec();
        p.enc.encoder_stream_consumed(pending.len());
        p.to_decoder.extend(pending);
        p.deliver_encoder(usize::MAX);
        let decoded = fields(p.dec.decode(i as u64 * 4, &section).unwrap());
        assert_eq!(decoded_pairs(decoded), *list);
        p.acknowledge();
        for ((name, _), cost) in list.iter().zip(&costs) {
            match by_name.iter_mut().find(|(n, _)| n == name) {
                Some((_, bytes)) => *bytes += cost.section + cost.encoder_stream,
                None => by_name.push((name.clone(), cost.section + cost.encoder_stream)),
            }
        }
    }
    (by_name, total)
}

fn list(fields: &[(&str, String)]) -> List {
    fields
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.clone().into_bytes()))
        .collect()
}

fn token(rng: &mut Rng, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len)
        .map(|_| ALPHABET[rng.below_usize(64)] as char)
        .collect()
}

/// Responses of a large web property: next to headers that never change, values unique by
/// nature on every response (a debug token, a trip ID, a hash, a length) and a date that
/// changes every `per_second` responses.
fn unique_values_corpus(per_second: f64) -> Vec<List> {
    let mut rng = Rng(30);
    (0..200u32)
        .map(|i| {
            list(&[
                (":status", "200".into()),
                ("content-type", "text/html; charset=\"utf-8\"".into()),
                ("x-frame-options", "DENY".into()),
                ("x-xss-protection", "0".into()),
                ("pragma", "no-cache".into()),
                (
                    "cache-control",
                    "private, no-cache, no-store, must-revalidate".into(),
                ),
                ("content-md5", format!("{}==", token(&mut rng, 22))),
                ("content-length", (1000 + rng.below(900_000)).to_string()),
                ("x-fb-debug", format!("{}==", token(&mut rng, 86))),
                (
                    "x-fb-trip-id",
                    (1_000_000_000 + rng.below(8_999_999_999)).to_string(),
                ),
                ("date", {
                    let second = (f64::from(i) / per_second) as u32;
                    format!(
                        "Wed, 25 Nov 2026 09:{:02}:{:02} GMT",
                        second / 60,
                        second % 60
                    )
                }),
            ])
        })
        .collect()
}

/// No field name costs more with the dynamic table than with the static table alone: values
/// that never repeat are not inserted, names that repeat with such values are referenced.
/// Dates that come four to three seconds are worth no entry: learning that costs a few bytes.
#[test]
fn values_that_never_repeat_cost_no_more_than_the_static_table() {
    let lists = unique_values_corpus(4.0 / 3.0);
    let (ours, total) = costs_by_name(4096, &lists);
    let (stat, static_total) = costs_by_name(0, &lists);
    for ((name, bytes), (_, static_bytes)) in ours.iter().zip(&stat) {
        let learning = if name == b"date" { 4 } else { 0 };
        assert!(
            *bytes <= static_bytes + learning,
            "{}: {bytes} bytes against {static_bytes} static-only",
            String::from_utf8_lossy(name)
        );
    }
    let cost = |name: &str| ours.iter().find(|(n, _)| n == name.as_bytes()).unwrap().1;
    let static_cost = |name: &str| stat.iter().find(|(n, _)| n == name.as_bytes()).unwrap().1;
    // The debug token's name is referenced: each line saves most of its 10-byte name.
    assert!(cost("x-fb-debug") + 200 * 5 <= static_cost("x-fb-debug"));
    assert!(total * 100 < static_total * 75, "{total} {static_total}");

    // Three responses a second: the date is worth inserting.
    let lists = unique_values_corpus(3.0);
    let (ours, _) = costs_by_name(4096, &lists);
    let (stat, _) = costs_by_name(0, &lists);
    let date = |c: &[(Vec<u8>, usize)]| c.iter().find(|(n, _)| n == b"date").unwrap().1;
    assert!(
        date(&ours) * 10 < date(&stat) * 6,
        "{} {}",
        date(&ours),
        date(&stat)
    );
}

/// A long cookie line (as a browser sends one to a shop: 30 crumbs, 1.5 KB) that changes now
/// and then is inserted and stays in the table while it is used, although smaller lines keep
/// arriving: each value costs about one literal, not one per request.
#[test]
fn a_long_cookie_line_stays_in_the_table_while_in_use() {
    let mut rng = Rng(31);
    let mut jar: Vec<String> = (0..30)
        .map(|i| format!("crumb{i}={}", token(&mut rng, 40)))
        .collect();
    let mut lists = Vec::new();
    let mut values = 1;
    for i in 0..200 {
        if i % 40 == 39 {
            jar[3] = format!("crumb3={}", token(&mut rng, 40));
            values += 1;
        }
        lists.push(list(&[
            (":method", "GET".into()),
            (":path", format!("/p/{}", token(&mut rng, 12))),
            (
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0".into(),
            ),
            ("referer", format!("https://shop.example/page/{}", i / 20)),
            ("cookie", jar.join("; ")),
        ]));
    }
    let (ours, _) = costs_by_name(4096, &lists);
    let cookie = ours.iter().find(|(n, _)| n == b"cookie").unwrap().1;
    let literal = lists[0][4].1.len();
    assert!(
        cookie < values * literal + 200 * 3,
        "{cookie} bytes for {values} values of {literal} bytes"
    );
}
