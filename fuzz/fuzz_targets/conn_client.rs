//! Connection state-machine fuzzing of the client: see `common/conn.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common/conn.rs"]
mod conn;

fuzz_target!(|data: &[u8]| conn::run(data, false, conn::Start::Established));
