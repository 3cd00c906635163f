"""Scores detect-secrets and `firstline redact` on the same messages; prints markdown tables.

Run by bench/redact/run with the tools virtualenv's Python (it imports detect_secrets).

A generated message counts as *detected* by detect-secrets when the scanner reports any finding
on one of its lines (any plugin: that is what a person running the scanner would see), and as
*redacted* by Firstline when none of its secret parts is left in `firstline redact`'s output.
A chatter line is a false positive for detect-secrets when it reports a finding on it, and for
Firstline when `firstline redact` changes it at all.

Usage: table.py FIRSTLINE_BIN SECRETS_JSONL CHATTER_TXT WORK_DIR
"""

import json
import os
import subprocess
import sys
from collections import OrderedDict

from detect_secrets.core.scan import scan_file
from detect_secrets.settings import default_settings


def firstline_redact(binary, text):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTLINE_")}
    env["RUST_LOG"] = "error"
    done = subprocess.run([binary, "redact"], input=text.encode(), capture_output=True, env=env, check=True)
    return done.stdout.decode()


def scanner_hits(messages, work_dir, name):
    """For each message, the detect-secrets plugin types reported on its lines."""
    path = os.path.join(work_dir, name)
    owner = []  # line number (1-based) -> message index
    with open(path, "w") as out:
        for index, text in enumerate(messages):
            for line in text.split("\n"):
                out.write(line + "\n")
                owner.append(index)
    found = [set() for _ in messages]
    # Findings as scanned, line by line: a SecretsCollection would merge equal findings across
    # lines (every `-----BEGIN RSA PRIVATE KEY-----`, and the GitHub plugin reports only the
    # token's prefix, so every `ghs_` token is one finding).
    with default_settings():
        for secret in scan_file(path):
            found[owner[secret.line_number - 1]].add(secret.type)
    return found


def pct(n, d, digits=0):
    return f"{100.0 * n / d:.{digits}f}%" if d else "-"


def main():
    binary, secrets_path, chatter_path, work_dir = sys.argv[1:5]
    generated = [json.loads(line) for line in open(secrets_path) if line.strip()]
    chatter = [line.rstrip("\n") for line in open(chatter_path) if line.strip()]

    hits = scanner_hits([g["text"] for g in generated], work_dir, "generated.txt")
    rows = OrderedDict()
    missed = []
    for item, found in zip(generated, hits):
        row = rows.setdefault(item["kind"], [0, 0, 0])
        row[0] += 1
        row[1] += bool(found)
        out = firstline_redact(binary, item["text"])
        left = [s for s in item["secrets"] if s in out]
        if left:
            missed.append((item["kind"], out))
        else:
            row[2] += 1

    print("| kind | generated | detected by detect-secrets | redacted by Firstline |")
    print("|---|---:|---:|---:|")
    totals = [0, 0, 0]
    for kind, (n, detected, redacted) in rows.items():
        totals = [totals[0] + n, totals[1] + detected, totals[2] + redacted]
        print(f"| {kind} | {n} | {detected} ({pct(detected, n)}) | {redacted} ({pct(redacted, n)}) |")
    n, detected, redacted = totals
    print(f"| **all** | {n} | {detected} ({pct(detected, n)}) | {redacted} ({pct(redacted, n)}) |")

    chatter_hits = scanner_hits(chatter, work_dir, "chatter.txt")
    flagged = [(line, sorted(found)) for line, found in zip(chatter, chatter_hits) if found]
    changed = []
    for line in chatter:
        out = firstline_redact(binary, line + "\n").rstrip("\n")
        if out != line:
            changed.append(out)
    print()
    print(f"Chatter corpus ({len(chatter)} lines of ordinary incident chatter), false positives:")
    print()
    print("| | lines flagged or changed | rate |")
    print("|---|---:|---:|")
    print(f"| detect-secrets (any finding) | {len(flagged)} | {pct(len(flagged), len(chatter), 1)} |")
    print(f"| Firstline (line changed) | {len(changed)} | {pct(len(changed), len(chatter), 1)} |")

    if missed:
        print()
        print("Generated secrets Firstline left in (its output):")
        for kind, out in missed:
            print(f"- {kind}: `{out.strip()[:160]}`".replace("\n", "⏎"))
    if flagged:
        print()
        print("Chatter lines detect-secrets flagged:")
        for line, types in flagged:
            print(f"- {', '.join(types)}: `{line[:160]}`")
    if changed:
        print()
        print("Chatter lines Firstline changed (its output):")
        for out in changed:
            print(f"- `{out[:160]}`")


if __name__ == "__main__":
    main()
