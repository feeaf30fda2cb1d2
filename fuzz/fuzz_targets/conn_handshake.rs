//! Connection state-machine fuzzing after a real TLS handshake that loses the datagrams the
//! input picks: the first input byte picks the fuzzed side (server when even), the next two
//! the drop mask; the rest is the program of `common/conn.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common/conn.rs"]
mod conn;

fuzz_target!(|data: &[u8]| {
    if let Some((&side, program)) = data.split_first() {
        conn::run(program, side & 1 == 0, conn::Start::Handshake);
    }
});
