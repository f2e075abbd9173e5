//! `exaviz serve`: stores answered over Arrow Flight where they lie, for `exaviz view
//! grpc://HOST:PORT/STORE` (or `ssh://HOST/PATH`, which starts it with `--stdio`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

/// `exaviz serve`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Stores, or folders holding stores: what the server answers for; a path outside them is
    /// refused.
    #[arg(required = true)]
    pub roots: Vec<PathBuf>,
    /// Where to listen, ADDRESS:PORT (port 0: any free one, printed). Loopback by default:
    /// another machine reaches it through an SSH tunnel, or name an address to listen there.
    #[arg(long, default_value = "127.0.0.1:50051", conflicts_with = "stdio")]
    pub listen: String,
    /// Serve one client over standard input and output (what `exaviz view ssh://HOST/PATH`
    /// runs on HOST), until it closes them.
    #[arg(long)]
    pub stdio: bool,
    /// Wait this many milliseconds before each answer: a simulated network round trip, for
    /// benchmarks.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub delay_ms: u64,
    /// One line per request on standard error: the store, what was asked, the rows or file
    /// pieces answered and the time taken.
    #[arg(long)]
    pub log: bool,
}

pub fn run(args: &Args) -> Result<()> {
    let mut served = exaviz_remote::server::Served::new(&args.roots, std::time::Duration::from_millis(args.delay_ms))
        .map_err(|e| anyhow::anyhow!(e))?;
    served.log = args.log;
    let served = Arc::new(served);
    let runtime = tokio_runtime()?;
    if args.stdio {
        return runtime.block_on(exaviz_remote::server::serve_stdio(served)).map_err(|e| anyhow::anyhow!(e));
    }
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let at = listener.local_addr()?;
        let names: Vec<String> = args.roots.iter().map(|r| r.display().to_string()).collect();
        // The first line a script or a test reads: where to connect.
        println!("exaviz serve: listening on {at} for {}", names.join(", "));
        use std::io::Write;
        std::io::stdout().flush()?;
        exaviz_remote::server::serve_tcp(served, listener).await.map_err(|e| anyhow::anyhow!(e))
    })
}

fn tokio_runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("exaviz-serve").build()?)
}
