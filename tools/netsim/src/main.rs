//! The `netsim` command line: see `netsim --help` and tools/netsim/README.md.

use std::io::ErrorKind;
use std::process::ExitCode;

use netsim::args::CliError;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut stdout = std::io::stdout().lock();
    match netsim::args::main(&args, &mut stdout) {
        Ok(true) => ExitCode::SUCCESS,
        // Some transfer did not complete in its time limit.
        Ok(false) => ExitCode::FAILURE,
        // Bad options: clap prints the error, naming the flag, and exits with status 2.
        Err(CliError::Usage(e)) => {
            drop(stdout);
            e.exit()
        }
        // Whoever read the output stopped reading: nothing left to say.
        Err(CliError::Output(e)) if e.kind() == ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::Output(e)) => {
            eprintln!("netsim: writing the output: {e}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(e)) => {
            eprintln!("netsim: {e}");
            ExitCode::from(2)
        }
    }
}
