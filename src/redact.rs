//! `firstline redact`: the rules Firstline applies to every Slack message and tool answer, run
//! on stdin, so an operator can check their own text before trusting them. Prints the text
//! redacted on stdout; with `--count`, what was removed per kind on stderr.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also print on stderr how many secrets of each kind were removed.
    #[arg(long)]
    count: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("reading stdin")?;
    let redacted = firstline_redact::redact(&String::from_utf8_lossy(&input));
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(redacted.text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("writing stdout")?;
    if args.count {
        for (kind, n) in &redacted.kinds {
            eprintln!("{n:>5}  {kind}");
        }
        eprintln!("{:>5}  redacted in all", redacted.redactions);
    }
    Ok(ExitCode::SUCCESS)
}
