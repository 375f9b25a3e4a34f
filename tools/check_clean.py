"""Fail when `nbdev_export`, `nbdev_clean` or the README generator would change a tracked source.

The notebooks are the source of truth: `keel/` must be exactly their export, the notebooks must be
clean (no outputs, counts or kernel metadata), and README.md must be the render of nbs/index.ipynb.
"""
import hashlib, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WATCH = ['keel', 'nbs', 'README.md']

def snapshot():
    "Digest of every file under the watched paths."
    out = {}
    for w in WATCH:
        p = ROOT/w
        files = [p] if p.is_file() else sorted(f for f in p.rglob('*') if f.is_file() and '__pycache__' not in f.parts and '.ipynb_checkpoints' not in f.parts)
        for f in files: out[str(f.relative_to(ROOT))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out

def main():
    before = snapshot()
    for cmd in ([str(BIN/'nbdev_export')], [str(BIN/'nbdev_clean')], [sys.executable, str(ROOT/'tools'/'make_readme.py')]):
        subprocess.run(cmd, cwd=ROOT, check=True)
    after = snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        print('nbdev_export / nbdev_clean / make_readme changed these files; run them and commit the result:')
        for c in changed: print('  ', c)
        sys.exit(1)
    print(f'export, clean and README are in step ({len(after)} files checked)')

if __name__ == '__main__': main()
