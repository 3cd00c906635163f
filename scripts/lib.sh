# Shared by scripts/*: where things live. Sourced, not run.

# The repository root, whatever directory the script was started from.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"


# Build output lives outside the clone, so a fresh clone on a machine that built Firstline
# before reuses the cache; on a new machine it is simply empty. Set CARGO_TARGET_DIR to choose.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/firstline/target}"

# cargo from rustup, when the login shell did not put it on PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

say() { printf '[%s] %s\n' "$(basename "$0")" "$*"; }
