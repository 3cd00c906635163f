# Shared by scripts/*: where things live. Sourced, not run.

# The repository root, whatever directory the script was started from.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"


# Build output lives outside the clone, so a fresh clone on a machine that built Firstline
# before reuses the cache; on a new machine it is simply empty. Set CARGO_TARGET_DIR to choose.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/firstline/target}"

# Two clones sharing that cache: cargo judges a workspace crate fresh by its files' times, so a
# test binary another clone built later looks fresh here, and it reads that clone's paths (tests
# find their data through env!("CARGO_MANIFEST_DIR")). When the clone changes, mark our sources
# newer, so the workspace crates rebuild here; dependencies are untouched.
checkout_marker="$CARGO_TARGET_DIR/.firstline-checkout"
if [ "$(cat "$checkout_marker" 2>/dev/null)" != "$REPO_ROOT" ] && [ -e "$REPO_ROOT/.git" ]; then
  git -C "$REPO_ROOT" ls-files -z -- '*.rs' | (cd "$REPO_ROOT" && xargs -0 touch --)
  mkdir -p "$CARGO_TARGET_DIR"
  printf '%s\n' "$REPO_ROOT" >"$checkout_marker"
fi

# cargo from rustup, when the login shell did not put it on PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

say() { printf '[%s] %s\n' "$(basename "$0")" "$*"; }
