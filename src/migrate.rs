//! `firstline migrate`: bring a database to the current schema. This is the production path
//! (run it before a new version's processes start); `firstline dev` does the same at start-up.

use firstline_config::{DatabaseUrl, Settings};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Database to migrate; defaults to database.url (FIRSTLINE_DATABASE__URL).
    #[arg(long)]
    database_url: Option<String>,
}

pub async fn run(mut settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    if let Some(url) = args.database_url {
        settings.database.url = DatabaseUrl::new(url);
    }
    let pool = firstline_store::connect(&settings.database).await?;
    firstline_store::migrate(&pool, &settings.database.url).await?;
    let applied = firstline_store::applied_migrations(&pool).await?;
    println!(
        "{}: schema up to date ({applied} migrations applied)",
        settings.database.url
    );
    pool.close().await;
    Ok(ExitCode::SUCCESS)
}
