//! Finding evaluation cases. A directory is a case when it holds `scenario.yaml` (ours) or
//! `investigate_request.json` (HolmesGPT's); otherwise each of its subdirectories that is a case
//! is one. Cases are sorted by path within each given directory.

use std::path::{Path, PathBuf};

/// Which format a case is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    /// `lab/scenarios/<name>/scenario.yaml`.
    Scenario,
    /// `<case>/investigate_request.json` + `*.txt` recordings + `rubric.yaml`.
    Holmes,
}

impl CaseKind {
    pub fn label(self) -> &'static str {
        match self {
            CaseKind::Scenario => "scenario",
            CaseKind::Holmes => "holmes",
        }
    }
}

/// One case to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The directory's name: what the table shows and `--expect-fail` names.
    pub name: String,
    pub dir: PathBuf,
    pub kind: CaseKind,
}

/// The kind of case `dir` is, if it is one.
pub fn case_kind(dir: &Path) -> Option<CaseKind> {
    if dir.join("scenario.yaml").is_file() {
        Some(CaseKind::Scenario)
    } else if dir.join("investigate_request.json").is_file() {
        Some(CaseKind::Holmes)
    } else {
        None
    }
}

/// Every case in `dirs`, in order. A directory with no case in it is an error (a typo in the
/// test command must not pass as "nothing failed").
pub fn discover(dirs: &[PathBuf]) -> anyhow::Result<Vec<Case>> {
    let mut cases = Vec::new();
    for dir in dirs {
        if !dir.is_dir() {
            anyhow::bail!("{}: not a directory", dir.display());
        }
        if let Some(kind) = case_kind(dir) {
            cases.push(case(dir, kind));
            continue;
        }
        let entries = std::fs::read_dir(dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", dir.display()))?;
        let mut subdirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        subdirs.sort();
        let before = cases.len();
        for sub in subdirs {
            if let Some(kind) = case_kind(&sub) {
                cases.push(case(&sub, kind));
            }
        }
        if cases.len() == before {
            anyhow::bail!(
                "{}: no scenario.yaml or investigate_request.json in it or its subdirectories",
                dir.display()
            );
        }
    }
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!("two cases are named {}: names must be unique", pair[0]);
    }
    Ok(cases)
}

fn case(dir: &Path, kind: CaseKind) -> Case {
    let name = dir
        .canonicalize()
        .ok()
        .as_deref()
        .and_then(Path::file_name)
        .or_else(|| dir.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "case".into());
    Case {
        name,
        dir: dir.to_path_buf(),
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_both_formats_and_rejects_empty_directories() {
        let root = tempfile::tempdir().unwrap();
        let ours = root.path().join("a-scenario");
        let theirs = root.path().join("01_case");
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::create_dir_all(&theirs).unwrap();
        std::fs::create_dir_all(root.path().join("not-a-case")).unwrap();
        std::fs::write(ours.join("scenario.yaml"), "x").unwrap();
        std::fs::write(theirs.join("investigate_request.json"), "{}").unwrap();

        let found = discover(&[root.path().to_path_buf()]).unwrap();
        let names: Vec<_> = found.iter().map(|c| (c.name.as_str(), c.kind)).collect();
        assert_eq!(
            names,
            [
                ("01_case", CaseKind::Holmes),
                ("a-scenario", CaseKind::Scenario)
            ]
        );
        assert_eq!(discover(std::slice::from_ref(&ours)).unwrap().len(), 1);
        assert!(discover(&[root.path().join("not-a-case")]).is_err());
    }
}
