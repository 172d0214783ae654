"""Runs every block of the README's "Five ways in" section, as written.

    python readme_test.py REPO PYTHON NODE_APP_DIR

`sh` blocks run in bash from the repository with target/release first on
PATH (so `proem` is the one just built); the `python` block in PYTHON (the
virtual environment the wheel was installed into); the `js` block as an ES
module in NODE_APP_DIR (where the packed addon was installed); the `rust`
block must be, line for line, the doctest of host/proem/src/lib.rs that
`cargo test` runs. Each block must exit 0 and print something. The last
line is `readme: N passed, N failed`.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

repo, python, node_app = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
readme = (repo / "README.md").read_text()
section = readme.split("<!-- ways-in:start -->", 1)[1].split("<!-- ways-in:end -->", 1)[0]
blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
env = dict(os.environ, PATH=f"{repo / 'target' / 'release'}:{os.environ['PATH']}")
passed = failed = 0


def run(lang, code):
    if lang == "sh":
        return subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=repo, env=env, capture_output=True, timeout=120)
    if lang == "python":
        return subprocess.run([python, "-c", code], cwd=repo, env=env, capture_output=True, timeout=120)
    if lang == "js":
        script = node_app / "readme-snippet.mjs"
        script.write_text(f"process.chdir({str(repo)!r});\n{code}")
        return subprocess.run(["node", str(script)], cwd=node_app, env=env, capture_output=True, timeout=120)
    if lang == "rust":
        doc = (repo / "host" / "proem" / "src" / "lib.rs").read_text()
        doctest = [line.removeprefix("//! ") for line in doc.splitlines() if line.startswith("//! ")]
        lines = code.strip().splitlines()
        found = any(doctest[i:i + len(lines)] == lines for i in range(len(doctest)))
        return subprocess.CompletedProcess(lang, 0 if found else 1, b"doctest" if found else b"",
                                           b"" if found else b"not the doctest of host/proem/src/lib.rs word for word")
    raise SystemExit(f"readme: no runner for a {lang} block")


langs = [lang for lang, _ in blocks]
if sorted(set(langs)) != ["js", "python", "rust", "sh"] or len(blocks) != 5:
    print(f"readme: expected five blocks (sh, rust, python, js, sh), found {langs}")
    failed += 1
for lang, code in blocks:
    done = run(lang, code)
    ok = done.returncode == 0 and done.stdout.strip()
    print(f"readme: {lang} block {'ok' if ok else 'FAILED'}: {code.strip().splitlines()[0]}")
    if not ok:
        print(done.stdout.decode(errors="replace")[-2000:], done.stderr.decode(errors="replace")[-2000:])
    passed, failed = (passed + 1, failed) if ok else (passed, failed + 1)
print(f"readme: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
