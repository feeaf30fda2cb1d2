//! The harness of `encode_ab.sh`: encode time per header list at 4096/100 with every section
//! acknowledged at once, per list the best of ROUNDS rounds, summed and divided by the lists.
//! It uses only the `Encoder`/`Decoder` API and parses QIF itself, so that the same file builds
//! against a baseline revision of the library.
//!
//! Usage: `encbench ROUNDS CORPUS.qif...`; prints `FILE<TAB>MICROSECONDS` per file.

// A benchmark reads the clock; the library core does not.
#![allow(clippy::disallowed_methods)]
use quiche::h3::qpack::{Decoder, Encoder};
use std::time::{Duration, Instant};

fn parse(text: &[u8]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut lists = Vec::new();
    let mut cur = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first() == Some(&b'#') {
            continue;
        }
        if line.is_empty() {
            if !cur.is_empty() {
                lists.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let tab = line.iter().position(|&b| b == b'\t').unwrap_or(line.len());
        let v = if tab < line.len() {
            line[tab + 1..].to_vec()
        } else {
            Vec::new()
        };
        cur.push((line[..tab].to_vec(), v));
    }
    if !cur.is_empty() {
        lists.push(cur);
    }
    lists
}

fn round(lists: &[Vec<(Vec<u8>, Vec<u8>)>], times: &mut [Duration]) {
    let mut enc = Encoder::new();
    enc.set_max_table_capacity(4096);
    enc.apply_peer_settings(4096, 100);
    let mut dec = Decoder::new(4096, 100, u64::MAX);
    let mut out = Vec::new();
    for (i, list) in lists.iter().enumerate() {
        out.clear();
        let sid = 4 * i as u64;
        let t = Instant::now();
        enc.encode(sid, list.iter().map(|(n, v)| (&n[..], &v[..])), &mut out)
            .unwrap();
        times[i] = times[i].min(t.elapsed());
        let ins = enc.encoder_stream_pending().to_vec();
        enc.encoder_stream_consumed(ins.len());
        dec.feed_encoder_stream(&ins).unwrap();
        dec.decode(sid, &out).unwrap();
        let acks = dec.decoder_stream_pending().to_vec();
        dec.decoder_stream_consumed(acks.len());
        enc.feed_decoder_stream(&acks).unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args[1].parse().unwrap();
    for path in &args[2..] {
        let lists = parse(&std::fs::read(path).unwrap());
        let mut times = vec![Duration::MAX; lists.len()];
        for _ in 0..rounds {
            round(&lists, &mut times);
        }
        let sum: Duration = times.iter().sum();
        let name = std::path::Path::new(path)
            .file_name()
            .unwrap()
            .to_string_lossy();
        println!(
            "{name}\t{:.3}",
            sum.as_secs_f64() * 1e6 / lists.len() as f64
        );
    }
}
