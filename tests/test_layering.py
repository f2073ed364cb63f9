"""The architecture, checked: the store and monitor never import streamlit; the dashboard never loads models."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "sentence_transformers", "transformers", "llama_cpp", "openai"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_monitor_and_store_never_import_streamlit():
    offenders = [str(p.relative_to(REPO)) for d in ("monitor", "store", "prompts") for p in (REPO / d).rglob("*.py")
                 if "streamlit" in imported_modules(p)]
    assert offenders == []


def test_pages_and_ui_never_import_model_libraries():
    files = [REPO / "app.py", *(REPO / "pages").glob("*.py"), *(REPO / "ui").rglob("*.py")]
    offenders = [str(p.relative_to(REPO)) for p in files if p.exists() and imported_modules(p) & HEAVY]
    assert offenders == []


def test_pages_contain_no_sql():
    offenders = []
    for p in (REPO / "pages").glob("*.py"):
        text = p.read_text(encoding="utf-8").lower()
        if any(k in text for k in ("select ", "insert into", "update ", "db.query(", "db.execute(")):
            offenders.append(p.name)
    assert offenders == []


def test_importing_the_dashboard_data_layer_loads_no_model_library():
    """Transitively too: ui and store must not pull torch in through some helper."""
    code = (
        "import sys, importlib\n"
        "for m in ('store', 'store.queries', 'ui.data', 'ui.charts'):\n"
        "    try: importlib.import_module(m)\n"
        "    except ModuleNotFoundError: pass\n"
        f"bad = sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
