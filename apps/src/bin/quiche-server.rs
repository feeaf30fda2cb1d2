//! `quiche-server`: serves files over HTTP/3 and HTTP/0.9 on QUIC. See `quiche-server --help`.

use std::io::Write;
use std::process::ExitCode;

use quiche_apps::args;
use quiche_apps::server::Server;
use quiche_apps::setup;

fn main() -> ExitCode {
    // Usage errors exit with status 2 (clap's), --help and --version with 0.
    let args = args::parse_server(std::env::args().skip(1)).unwrap_or_else(|e| e.exit());
    setup::init_logging();
    if args.threads > 1 {
        return run_workers(&args);
    }
    let mut server = match Server::new(&args) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("quiche-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Scripts and tests read the bound address (useful with port 0) from this line.
    println!("listening on {}", server.local_addr());
    let _ = std::io::stdout().flush();
    match server.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quiche-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--threads N`: one event loop per thread on a shared address.
fn run_workers(args: &args::ServerArgs) -> ExitCode {
    let servers = match Server::workers(args, usize::from(args.threads)) {
        Ok(servers) => servers,
        Err(e) => {
            eprintln!("quiche-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(first) = servers.first() {
        println!("listening on {}", first.local_addr());
        let _ = std::io::stdout().flush();
    }
    let threads: Vec<_> = servers
        .into_iter()
        .map(|mut server| std::thread::spawn(move || server.run()))
        .collect();
    for t in threads {
        if let Ok(Err(e)) = t.join() {
            eprintln!("quiche-server: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
