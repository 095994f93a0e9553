"""The code's shape: no import cycle in the engine, the app behind the public face, no version strings."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine_model"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ENGINE_MODULES = {module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """Every import in a file, at any depth (function-local ones too): (module, names imported from it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def engine_edges(name: str) -> set[str]:
    """The engine modules one engine module imports; `from engine_model.pd import x` counts x if a module."""
    edges = set()
    for module, names in imports_of(ENGINE_MODULES[name]):
        for target in [f"{module}.{n}" for n in names] + [module]:
            if target in ENGINE_MODULES and target != "engine_model":
                edges.add(target)
                break
    return edges


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_no_import_cycle_among_engine_modules_counting_function_local_imports():
    graph = {name: engine_edges(name) for name in ENGINE_MODULES if name != "engine_model"}
    assert find_cycle(graph) == []


def test_engine_modules_never_import_the_public_face_for_names():
    """Inside the engine, `from engine_model import x` may only name a module (the face is for outsiders)."""
    for name, path in ENGINE_MODULES.items():
        if name == "engine_model":
            continue
        for module, names in imports_of(path):
            if module == "engine_model":
                assert all(f"engine_model.{n}" in ENGINE_MODULES for n in names), (name, names)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


# `import engine_model.x` in a fresh interpreter runs engine_model/__init__.py whole, the same each time,
# then loads x. So one interpreter imports the package once and forks a child per module: each child starts
# where a fresh interpreter would be after its package import (the same test, ~30 s -> ~2 s of CPU).
IMPORT_EACH_IN_A_FORK = """
import importlib, os, sys, traceback
import engine_model
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            print(name, traceback.format_exc()[-400:].replace(chr(10), ' | '))
            sys.stdout.flush()
            os._exit(1)
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_every_engine_module_imports_alone_in_a_fresh_interpreter():
    names = sorted(set(ENGINE_MODULES) - {"engine_model", "engine_model.__main__"})
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH_IN_A_FORK, *names], cwd=REPO,
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr[-400:]) == (0, "")  # the package itself imports alone
    assert done.stdout == ""  # no module failed alone


def test_an_import_cycle_fails_the_fork_check(tmp_path):
    """The check above can fail: a two-module cycle entered from the second module raises in its child."""
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic.b import B\nA = 1\n")
    (package / "b.py").write_text("from cyclic.a import A\nB = 2\n")
    script = IMPORT_EACH_IN_A_FORK.replace("import engine_model", "import cyclic")
    done = subprocess.run([sys.executable, "-c", script, "cyclic.a", "cyclic.b"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.stdout.count("ImportError") == 2, done.stdout


def module_level_imports(path: Path) -> set[str]:
    """The root package of every import that runs when the module is imported (not inside a function)."""
    roots, stack = set(), [ast.parse(path.read_text())]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.Import):
                roots |= {alias.name.split(".")[0] for alias in child.names}
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                roots.add(child.module.split(".")[0])
            stack.append(child)
    return roots


def test_the_engine_imports_no_front_end():
    for name, path in ENGINE_MODULES.items():
        roots = {module.split(".")[0] for module, _ in imports_of(path)}
        assert not roots & {"streamlit", "altair", "app", "vega", "vl_convert", "PIL"}, name


def test_the_presentation_layer_runs_without_streamlit():
    """app/present and app/charts draw for every surface, the `figure` command included: importing them (and
    all they import) loads no Streamlit."""
    code = "import sys, app.present.cli, app.charts.views; sys.exit('streamlit' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-400:]


def test_module_level_imports_skip_function_bodies(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import json\nif True:\n    import csv\ndef f():\n    import vl_convert\n")
    assert module_level_imports(source) == {"json", "csv"}


def test_the_app_imports_only_the_public_face():
    deep = [(str(p.relative_to(REPO)), module) for p in sorted((REPO / "app").rglob("*.py"))
            for module, _ in imports_of(p) if module.startswith("engine_model.")]
    assert deep == []


def test_scheduling_code_names_capabilities_not_release_strings():
    offenders = [f"{p.relative_to(REPO)}:{i}" for p in ENGINE.rglob("*.py") if "logs" not in p.parts
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if ("version ==" in line or "version !=" in line
                     or "version <" in line or "version >" in line)]
    assert offenders == []


def test_the_app_draws_no_emoji_that_needs_an_emoji_font():
    """Emoji (U+1F000 and up) show as a missing-glyph box where no emoji font is installed (a room machine,
    headless Chromium): icons are Streamlit's own (:material/…:, shipped with it) or inline SVG."""
    found = [(str(p.relative_to(REPO)), i) for p in sorted((REPO / "app").rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if any(ord(c) >= 0x1F000 for c in line)]
    assert found == []
