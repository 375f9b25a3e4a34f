"""Fail when `nbdev_export`, `nbdev_clean` or the README generator would change a tracked source, or when an exported
line is longer than 120 characters, or when an exported module imports a name it never uses or a private name of
another module (`tools/import_check.py`).

The notebooks are the source of truth: `keel/` must be exactly their export, the notebooks must be
clean (no outputs, counts or kernel metadata), and README.md must be the render of nbs/index.ipynb.
Lines over 120 characters are wrapped in the notebooks with `tools/wrap_lines.py`.
"""
import hashlib, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WATCH = ['keel', 'nbs', 'README.md']
sys.path.insert(0, str(ROOT/'tools'))
from wrap_lines import LIMIT, exported_long_lines
from import_check import findings as import_findings

def snapshot():
    "Digest of every file under the watched paths."
    out = {}
    for w in WATCH:
        p = ROOT/w
        skip = ('__pycache__', '.ipynb_checkpoints')
        files = [p] if p.is_file() else sorted(f for f in p.rglob('*') if f.is_file() and not set(skip) & set(f.parts))
        for f in files: out[str(f.relative_to(ROOT))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out

def main():
    before = snapshot()
    for cmd in ([str(BIN/'nbdev_export')], [str(BIN/'nbdev_clean')],
                [sys.executable, str(ROOT/'tools'/'make_readme.py')]):
        subprocess.run(cmd, cwd=ROOT, check=True)
    after = snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        print('nbdev_export / nbdev_clean / make_readme changed these files; run them and commit the result:')
        for c in changed: print('  ', c)
        sys.exit(1)
    long = exported_long_lines(ROOT)
    if long:
        print(f'exported lines over {LIMIT} characters; wrap them in the notebooks '
              f'(python tools/wrap_lines.py NOTEBOOK) and export again:')
        for f, i in long: print(f'   {f}:{i}')
        sys.exit(1)
    bad = import_findings(ROOT)
    if bad:
        print('imports to remove from the notebooks\' exported cells, or names to make public (tools/import_check.py):')
        for b in bad: print('  ', b)
        sys.exit(1)
    print(f'export, clean and README are in step ({len(after)} files checked); '
          f'no exported line over {LIMIT} characters; no unused or private import')

if __name__ == '__main__': main()
