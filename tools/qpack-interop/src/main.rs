//! `qpack-interop`: QPACK offline interop and compression benchmark.
//!
//! ```text
//! qpack-interop encode --table-size N --max-blocked B [--immediate-ack] [--no-set-capacity] IN.qif OUT
//! qpack-interop decode --table-size N --max-blocked B [--strict-start] IN OUT.qif
//! qpack-interop compare [--any-order] EXPECTED.qif GOT.qif
//! qpack-interop bench [--setting N/B]... [--lsqpack TOOL.py] [--by-header] CORPUS.qif...
//! ```
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use qpack_interop::bench::{self, BenchOptions, Setting};
use qpack_interop::blocks;
use qpack_interop::codec::{self, DecodeOptions, EncodeOptions};
use qpack_interop::qif;

/// QPACK offline interop: QIF header lists to encoded block files and back.
#[derive(Parser, Debug)]
#[command(name = "qpack-interop", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Encode the header lists of a QIF file (list k on stream k) into a block file.
    Encode {
        /// The peer decoder's SETTINGS_QPACK_MAX_TABLE_CAPACITY (also our table limit).
        #[arg(long)]
        table_size: u64,
        /// The peer decoder's SETTINGS_QPACK_BLOCKED_STREAMS.
        #[arg(long)]
        max_blocked: u64,
        /// Every field section is acknowledged as soon as it is written.
        #[arg(long)]
        immediate_ack: bool,
        /// Leave out the opening Set Dynamic Table Capacity, as the files published for the
        /// offline interop do: their decoders start with a table of the size given.
        #[arg(long)]
        no_set_capacity: bool,
        /// The QIF input.
        input: PathBuf,
        /// The encoded output.
        output: PathBuf,
    },
    /// Decode a block file into QIF, lists in stream order.
    Decode {
        /// Our SETTINGS_QPACK_MAX_TABLE_CAPACITY.
        #[arg(long)]
        table_size: u64,
        /// Our SETTINGS_QPACK_BLOCKED_STREAMS.
        #[arg(long)]
        max_blocked: u64,
        /// RFC 9204 §3.2.3: the table has capacity 0 until the encoder stream sets it. By
        /// default it starts at --table-size, the offline-interop convention that the
        /// published files assume (their encoders begin with insertions).
        #[arg(long)]
        strict_start: bool,
        /// The encoded input.
        input: PathBuf,
        /// The QIF output.
        output: PathBuf,
    },
    /// Compare the header lists of two QIF files (comments and blank-line runs ignored);
    /// exits 1 at the first difference.
    Compare {
        /// Compare the lists as multisets: decoders may write them in another order.
        #[arg(long)]
        any_order: bool,
        /// The expected lists.
        expected: PathBuf,
        /// The lists to check.
        got: PathBuf,
    },
    /// Compression benchmark: wire bytes with the static table only, with our dynamic table
    /// and optionally with ls-qpack; encode and decode time per header list.
    Bench {
        /// A table size and blocked-streams limit to measure, TABLE/BLOCKED (repeatable); the
        /// first one is checked and timed.
        #[arg(long = "setting", default_values = ["4096/100", "256/0"])]
        settings: Vec<Setting>,
        /// Timed repetitions of each encode and decode.
        #[arg(long, default_value_t = 50)]
        repeat: u32,
        /// Path of pylsqpack_tool.py: run it (python3) for ls-qpack's figures.
        #[arg(long)]
        lsqpack: Option<PathBuf>,
        /// Also show what each field name's lines cost.
        #[arg(long)]
        by_header: bool,
        /// Corpus files; each is one direction of a connection with its own encoder.
        #[arg(required = true)]
        corpus: Vec<PathBuf>,
    },
}

fn read_qif(path: &PathBuf) -> anyhow::Result<Vec<qif::HeaderList>> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    qif::parse(&text).with_context(|| format!("{}", path.display()))
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Cmd::Encode {
            table_size,
            max_blocked,
            immediate_ack,
            no_set_capacity,
            input,
            output,
        } => {
            let lists = read_qif(&input)?;
            let opts = EncodeOptions {
                table_size,
                max_blocked,
                immediate_ack,
                no_set_capacity,
                costs: false,
            };
            let encoded = codec::encode(&lists, &opts)?;
            std::fs::write(&output, &encoded.file)
                .with_context(|| format!("writing {}", output.display()))?;
        }
        Cmd::Decode {
            table_size,
            max_blocked,
            strict_start,
            input,
            output,
        } => {
            let file =
                std::fs::read(&input).with_context(|| format!("reading {}", input.display()))?;
            let blocks = blocks::parse(&file).with_context(|| format!("{}", input.display()))?;
            let opts = DecodeOptions {
                table_size,
                max_blocked,
                strict_start,
            };
            let decoded = codec::decode(&blocks, &opts)
                .with_context(|| format!("decoding {}", input.display()))?;
            let text = qif::write(&decoded.lists)?;
            std::fs::write(&output, text)
                .with_context(|| format!("writing {}", output.display()))?;
        }
        Cmd::Compare {
            any_order,
            expected,
            got,
        } => {
            let mut e = read_qif(&expected)?;
            let mut g = read_qif(&got)?;
            if any_order {
                e.sort();
                g.sort();
            }
            if let Some(diff) = qif::first_difference(&e, &g) {
                eprintln!(
                    "qpack-interop: {} differs from {}: {diff}",
                    got.display(),
                    expected.display()
                );
                return Ok(ExitCode::FAILURE);
            }
        }
        Cmd::Bench {
            settings,
            repeat,
            lsqpack,
            by_header,
            corpus,
        } => {
            let opts = BenchOptions {
                settings,
                repeat,
                lsqpack_tool: lsqpack,
                by_header,
            };
            print!("{}", bench::run(&corpus, &opts)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("qpack-interop: {e:#}");
            ExitCode::from(2)
        }
    }
}
