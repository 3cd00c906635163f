//! `firstline-lab serve --scenario DIR [--port P | --stdio [--writable]]`: runs the lab MCP
//! server for one scenario. Over HTTP it prints the read-only MCP URL, then the write endpoint's
//! URL (the read tools plus `resources_create_or_update`, `resources_scale`, `pods_delete`, over
//! the same world), one per line, and serves until Ctrl-C; over stdio it serves until the client
//! disconnects, read-only unless `--writable` (logs go to stderr, never stdout, which carries the
//! protocol).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use firstline_lab::{Scenario, serve_http, serve_stdio, serve_stdio_writable};

#[derive(Parser)]
#[command(
    name = "firstline-lab",
    about = "Firstline's lab: serve an incident scenario over MCP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve one scenario over MCP (streamable HTTP: read-only at /mcp, writes at /write/mcp;
    /// or stdio).
    Serve {
        /// The scenario directory (holding scenario.yaml) or file.
        #[arg(long)]
        scenario: PathBuf,
        /// HTTP port (0 picks a free one and prints it).
        #[arg(long, default_value_t = 0, conflicts_with = "stdio")]
        port: u16,
        /// Address to bind for HTTP.
        #[arg(long, default_value = "127.0.0.1", conflicts_with = "stdio")]
        bind: IpAddr,
        /// Serve over stdin/stdout instead of HTTP.
        #[arg(long)]
        stdio: bool,
        /// Over stdio, serve the write tools too.
        #[arg(long, requires = "stdio")]
        writable: bool,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let Command::Serve {
        scenario,
        port,
        bind,
        stdio,
        writable,
    } = Cli::parse().command;
    let scenario = Scenario::load(&scenario)?;
    if stdio {
        if writable {
            serve_stdio_writable(scenario).await?;
        } else {
            serve_stdio(scenario).await?;
        }
        return Ok(());
    }
    let handle = serve_http(scenario, SocketAddr::new(bind, port))
        .await
        .with_context(|| format!("binding {bind}:{port}"))?;
    println!("{}", handle.mcp_url());
    println!("{}", handle.write_url());
    tokio::signal::ctrl_c().await?;
    handle.shutdown().await;
    Ok(())
}
