"""Imports that do nothing and private names borrowed across modules, in the exported package.

    python tools/import_check.py      # keel/, and private keel names in bench/, tools/, tests/; exit 1 on a finding

An import a module never names (nor lists in `__all__`) is dead weight that hides real dependencies; a `_name`
imported from another module is a promise the other module never made. `tools/check_clean.py` runs this check,
and `tests/test_layers.py` runs it with the layer checks.
"""
import ast, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def unused_imports(path:Path) -> list[str]:
    "`name (line)` for each module-level import of `path` the module never names (nor lists in `__all__`)."
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    named = {w for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             for w in re.findall(r"[A-Za-z_]\w*", n.value)}       # a name in a string: __all__, a source list
    out = []
    for n in tree.body:
        if not isinstance(n, (ast.Import, ast.ImportFrom)) or getattr(n, "module", None) == "__future__": continue
        for a in n.names:
            name = (a.asname or a.name).split(".")[0]
            if a.name != "*" and name not in used | named: out.append(f"{name} (line {n.lineno})")
    return out


def private_imports(path:Path) -> list[str]:
    "`module.name` for each `_name` imported from another module (a dunder is not private)."
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
            for a in n.names if a.name.startswith("_") and not a.name.startswith("__")]


def findings(root:Path=ROOT) -> list[str]:
    "`path: unused import name (line)` and `path: private import module.name` in keel/; private keel imports elsewhere."
    out = []
    for p in sorted((root / "keel").rglob("*.py")):
        if p.name == "_modidx.py": continue
        rel = p.relative_to(root)
        out += [f"{rel}: unused import {u}" for u in unused_imports(p)]
        out += [f"{rel}: private import {x}" for x in private_imports(p)]
    for d in ("bench", "tools", "tests"):     # scripts and tests use keel's public names only
        for p in sorted((root / d).glob("*.py")):
            rel = p.relative_to(root)
            out += [f"{rel}: private import {x}" for x in private_imports(p) if x.split(".")[0] == "keel"]
    return out


if __name__ == "__main__":
    found = findings()
    for f in found: print(f)
    sys.exit(1 if found else 0)
