"""The package's import structure: no import cycle between its modules, and every import points down the layers.

Imports are read with `ast` from every `keel/**/*.py`, at module level and inside functions: an import inside a
function ties two modules as firmly as one at the top, it only waits for the first call. `from keel import db`,
`from . import db` and `import keel.db` all name the module `keel.db`; `from keel.evals.run import ask_item` names
`keel.evals.run`; `importlib.import_module("keel.x")` with a literal name counts too. The layers are the module
map's in CONTRIBUTING.md, lowest first; a module of a package not placed there fails until it is.
"""
import ast, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from import_check import unused_imports, private_imports   # the check tools/check_clean.py runs

# the module map's layers, lowest first; a name covers the module and everything under it (the longest name wins)
LAYERS = [
    ("base", ["keel.errors", "keel.command", "keel.config", "keel.yamlfile", "keel.atomicfile", "keel.db",
              "keel.airgap", "keel.models", "keel.executor", "keel.tokens", "keel.stats", "keel._modidx"]),
    ("providers", ["keel.providers"]),
    ("safety/observe", ["keel.safety", "keel.observe", "keel.agent.approvals"]),
    ("engines", ["keel.ingest", "keel.retrieval", "keel.answerability", "keel.answer", "keel.agent", "keel.evals"]),
    ("context", ["keel.factory"]),
    ("entry", ["keel.cli", "keel.chat", "keel.ui", "keel.agent.cli", "keel.pytest_plugin"]),
    ("test parts", ["keel.testing"]),   # the stand-ins tests and examples use: above everything, imported by nothing
]
# upward imports that stand today, each with its reason; one that goes away must leave this list too
KNOWN_UPWARD = {("keel.observe", "keel.answer.types"): "a log row is an `Answer` for a `User`: plain dataclasses"}


def modules(root:Path, package:str) -> dict[str, Path]:
    "{dotted module name: file} for every .py file of the package (a package's own name for its __init__.py)."
    out = {}
    for p in sorted((root / package).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _named(node, base:list[str]) -> list[str]:
    "The dotted names an import statement (or a literal `import_module` call) asks for, relative ones resolved."
    if isinstance(node, ast.Import): return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        pkg = base[:len(base) - node.level + 1] if node.level else []
        src = ".".join(pkg + ([node.module] if node.module else []))
        return [f"{src}.{a.name}" for a in node.names] + [src]
    f = getattr(node, "func", None)
    if (isinstance(node, ast.Call) and getattr(f, "attr", getattr(f, "id", None)) == "import_module" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return [node.args[0].value]
    return []


def imports(root:Path, package:str) -> dict[str, dict[str, int]]:
    "{module: {module it imports: first line}} within the package, from every import anywhere in each file."
    mods, out = modules(root, package), {}
    for m, path in mods.items():
        base = m.split(".") if path.name == "__init__.py" else m.split(".")[:-1]
        edges = out.setdefault(m, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = _named(node, base)
            if isinstance(node, ast.ImportFrom):     # `from p import x`: the module p.x when there is one, else p
                names = [n for n in names[:-1] if n in mods] or names[-1:]
            for n in names:
                while n and n not in mods: n = n.rpartition(".")[0]
                if n and n != m and n != package: edges.setdefault(n, node.lineno)
    return out


def cycles(graph:dict[str, dict]) -> list[list[str]]:
    "The groups of modules that reach each other through imports (Tarjan's strongly connected components, size > 1)."
    index, low, stack, on, out = {}, {}, [], set(), []
    for start in graph:
        if start in index: continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = len(index); stack.append(start); on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index); stack.append(w); on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                elif w in on: low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work: low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop(); on.discard(w); group.append(w)
                    if w == v: break
                if len(group) > 1: out.append(sorted(group))
    return out


def layer_of(module:str, layers=LAYERS) -> int|None:
    "The index of the module's layer: the longest name in `layers` that is the module or a package above it."
    best = max(((len(n), i) for i, (_, names) in enumerate(layers) for n in names
                if module == n or module.startswith(n + ".")), default=None)
    return None if best is None else best[1]


def upward(graph:dict[str, dict], layers=LAYERS) -> dict[tuple[str, str], int]:
    "{(importer, imported): line} for every import from a lower layer into a higher one."
    return {(a, b): line for a, edges in graph.items() for b, line in edges.items()
            if layer_of(a, layers) is not None and layer_of(b, layers) is not None
            and layer_of(b, layers) > layer_of(a, layers)}


def _where(graph, group) -> str:
    return "; ".join(f"{a} -> {b} (line {graph[a][b]})" for a in group for b in graph[a] if b in group)


# ---------------------------------------------------------------- the rules, checked on a small made-up package

@pytest.fixture
def toy(tmp_path):
    "A package `toy`: base <- engine <- top, each written by the test."
    def write(**files):
        for name, text in files.items():
            p = tmp_path / "toy" / f"{name.replace('.', '/')}.py"
            p.parent.mkdir(parents=True, exist_ok=True); p.write_text(text)
        return imports(tmp_path, "toy")
    (tmp_path / "toy").mkdir(); (tmp_path / "toy" / "__init__.py").write_text("")
    return write


TOY_LAYERS = [("base", ["toy.base"]), ("engines", ["toy.eng"]), ("top", ["toy.top"])]


def test_a_function_level_import_closes_a_cycle(toy):
    g = toy(**{"base": "import os\n", "eng.__init__": "",
               "eng.run": "from ..base import *\nfrom toy.top import build\n",
               "top": "from toy import base\ndef build():\n    from .eng import run\n    return run\n"})
    assert g["toy.top"] == {"toy.base": 1, "toy.eng.run": 3} and g["toy.eng.run"] == {"toy.base": 1, "toy.top": 2}
    assert cycles(g) == [["toy.eng.run", "toy.top"]]
    assert upward(g, TOY_LAYERS) == {("toy.eng.run", "toy.top"): 2}


def test_a_package_without_cycles_or_upward_imports_passes(toy):
    g = toy(**{"base": "", "eng": "import importlib\nB = importlib.import_module('toy.base')\n",
               "top": "def build():\n    from toy.eng import B\n    return B\n"})
    assert g["toy.eng"] == {"toy.base": 2} and cycles(g) == [] and upward(g, TOY_LAYERS) == {}


# ---------------------------------------------------------------- the rules, held against keel

@pytest.fixture(scope="module")
def keel():
    return imports(ROOT, "keel")


def test_keel_has_no_import_cycle(keel):
    found = cycles(keel)
    assert not found, "import cycles: " + " | ".join(_where(keel, g) for g in found)


def test_every_keel_module_has_a_layer(keel):
    assert [m for m in keel if m != "keel" and layer_of(m) is None] == []


def test_keel_imports_point_down_the_layers(keel):
    up = upward(keel)
    new = {f"{a} -> {b} (line {line})" for (a, b), line in up.items() if (a, b) not in KNOWN_UPWARD}
    assert not new, f"imports from a lower layer into a higher one: {sorted(new)}"
    gone = set(KNOWN_UPWARD) - set(up)
    assert not gone, f"no longer imported upward, remove from KNOWN_UPWARD: {sorted(gone)}"


def test_no_library_module_imports_the_test_parts(keel):
    importers = sorted(m for m, edges in keel.items() if not m.startswith("keel.testing")
                       and any(e == "keel.testing" or e.startswith("keel.testing.") for e in edges))
    assert importers == [], f"library modules importing the test stand-ins (keel.testing): {importers}"
    assert {m for m in keel if m.startswith("keel.testing")} == {"keel.testing", "keel.testing.azure"}


def test_only_entry_points_import_the_factory(keel):
    importers = sorted(m for m, edges in keel.items() if "keel.factory" in edges)
    entry = [m for m in importers if layer_of(m) == [name for name, _ in LAYERS].index("entry")]
    assert importers and importers == entry, f"importing the factory from below the entry points: {importers}"


# ---------------------------------------------------------------- imports that do nothing, private names borrowed

def test_the_checks_see_an_unused_and_a_private_import(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os, re, sys\nfrom a.b import _x, y\nfrom __future__ import annotations\n"
                 "print(re, y, 'no os here')\n")
    assert unused_imports(f) == ["sys (line 1)", "_x (line 2)"] and private_imports(f) == ["a.b._x"]


# what stands today, each to go when its module is next edited; one that goes away must leave this list too
KNOWN_UNUSED = {}
KNOWN_PRIVATE = {}


def test_keel_has_no_unused_import():
    found = {str(p.relative_to(ROOT)): unused_imports(p) for p in sorted((ROOT / "keel").rglob("*.py"))
             if p.name != "_modidx.py"}
    found = {k: v for k, v in found.items() if v}
    new = {k: v for k, v in found.items() if len(v) > KNOWN_UNUSED.get(k, 0)}
    assert not new, f"unused imports (remove them from the notebook's exported cell): {new}"
    fewer = {k for k, n in KNOWN_UNUSED.items() if len(found.get(k, [])) < n}
    assert not fewer, f"fewer unused imports than KNOWN_UNUSED says, lower it: {sorted(fewer)}"


def test_keel_borrows_no_private_name():
    found = {str(p.relative_to(ROOT)): private_imports(p) for p in sorted((ROOT / "keel").rglob("*.py"))}
    found = {k: v for k, v in found.items() if v}
    assert found == KNOWN_PRIVATE, f"a private name imported from another module (make it public): {found}"


def test_scripts_and_tests_borrow_no_private_keel_name():
    found = {str(p.relative_to(ROOT)): [x for x in private_imports(p) if x.startswith("keel.")]
             for d in ("bench", "tools", "tests") for p in sorted((ROOT / d).glob("*.py"))}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"a private keel name imported by a script or test (make it public in its notebook): {found}"


def test_screen_fitting_is_not_imported_at_run_time():
    "keel.safety.fit needs scikit-learn (a development dependency): no module of the package may import it."
    import ast
    users = []
    for p in sorted((ROOT / "keel").rglob("*.py")):
        if p.name in ("fit.py", "_modidx.py"): continue
        pkg = list(p.relative_to(ROOT).with_suffix("").parts[:-1])
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Import): mods = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):    # a relative import resolved against the module's package
                base = ".".join(pkg[:len(pkg) - n.level + 1] if n.level else [])
                mods = [".".join(x for x in (base, n.module or "") if x)]
                mods += [f"{mods[0]}.{a.name}" for a in n.names]     # from keel.safety import fit
            else: continue
            if "keel.safety.fit" in mods: users.append(str(p.relative_to(ROOT)))
    assert not users, users


# ---------------------------------------------------------------- one harness shape

def _evals_classes():
    "Every class defined in a keel.evals module, by (module, name), after every module of the wing is imported."
    import importlib, inspect, pkgutil
    import keel.evals
    out = {}
    for m in pkgutil.iter_modules(keel.evals.__path__):
        mod = importlib.import_module(f"keel.evals.{m.name}")
        out.update({(mod.__name__, n): c for n, c in vars(mod).items()
                    if inspect.isclass(c) and c.__module__ == mod.__name__})
    return out


def test_every_harness_result_keeps_one_shape():
    from keel.evals.gate import HarnessResult, REPORT_ROWS
    import dataclasses
    results = {n: c for (_, n), c in _evals_classes().items() if n.endswith("Result") and c is not HarnessResult}
    has = lambda c, a: hasattr(c, a) or a in {f.name for f in dataclasses.fields(c)}
    assert set(results) >= {"EvalResult", "AgentEvalResult", "RobustnessResult", "BenchmarkResult", "ReviewResult",
                            "ClaimsResult", "CompareResult", "AclResult", "StaleResult", "ConversationsResult"}
    missing = {n: [a for a in ("kind", "passed", "payload", "write") if not has(c, a)] for n, c in results.items()}
    assert not {n: m for n, m in missing.items() if m}, f"results without the HarnessResult shape: {missing}"
    assert {n: c.kind for n, c in results.items() if c.kind not in REPORT_ROWS} == {}
    assert len({c.kind for c in results.values()}) == len(results), "two results of one kind"


def test_one_bound_type_and_one_gate():
    names = [n for (_, n) in _evals_classes()]
    assert [n for n in names if n.endswith("Check")] == ["FloorCheck"], names
    assert names.count("Gate") == 1 and not {"GateCheck", "GateResult"} & set(names)
