//! The peer data in `third_party/peer/` and the alert catalogue in `third_party/alert-catalogue/`
//! are verbatim copies: every file is there (with its licence) and, when the project's shared peer
//! data sits next to the checkout, identical to it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("a readable file");
                out.insert(
                    path.strip_prefix(root).expect("under root").to_path_buf(),
                    bytes,
                );
            }
        }
    }
    out
}

#[test]
fn the_vendored_peer_data_is_complete_and_matches_its_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let vendored = root.join("third_party");
    assert!(
        vendored.join("alert-catalogue/README.md").is_file(),
        "alert-catalogue/README.md (source, commit, licence) is missing"
    );
    // (copy under `third_party/`, its source under `../shared/peer/`, its licence, file count).
    // The alert catalogue's own README.md is ours, so only its two data directories are compared.
    for (dir, source_dir, licence, at_least) in [
        ("peer/holmesgpt", "holmesgpt", "peer/holmesgpt/LICENSE", 5),
        (
            "peer/slack/events",
            "slack/events",
            "peer/slack/LICENSE-java-slack-sdk",
            90,
        ),
        (
            "alert-catalogue/rules",
            "alert-catalogue/rules",
            "alert-catalogue/rules/LICENSE",
            9,
        ),
        (
            "alert-catalogue/runbooks",
            "alert-catalogue/runbooks",
            "alert-catalogue/runbooks/LICENSE",
            119,
        ),
    ] {
        assert!(vendored.join(licence).is_file(), "{licence} is missing");
        let copied = files(&vendored.join(dir));
        assert!(copied.len() >= at_least, "{dir}: {} files", copied.len());
        let source = root.join("../shared/peer").join(source_dir);
        if source.is_dir() {
            assert_eq!(
                copied.keys().collect::<Vec<_>>(),
                files(&source).keys().collect::<Vec<_>>(),
                "{dir}: the same files as ../shared/peer"
            );
            assert!(
                copied == files(&source),
                "{dir}: a file differs from ../shared/peer"
            );
        }
    }
}
