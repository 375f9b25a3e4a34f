"""Shared fixtures for the end-to-end tests: they drive the installed `keel` package and command."""
import os, sys, shutil, subprocess
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"

def pytest_configure(config):
    config.addinivalue_line("markers", "slow: model-heavy; run with `make test-slow`")

@pytest.fixture
def keel_cmd():
    "Run the `keel` command of this environment; returns CompletedProcess with text output."
    exe = shutil.which("keel", path=str(Path(sys.executable).parent)) or "keel"
    def run(*args, env=None, input=None, timeout=600, cwd=None):
        e = {**os.environ, **(env or {})}
        return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=e, input=input, timeout=timeout, cwd=cwd)
    return run
