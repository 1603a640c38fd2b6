"""``python -m specviz.devtools imports``: the project's import graph, checked for circles.

Reads every module of specviz/, ui/, models/ and pages/ as text (ast; nothing is imported or run)
and prints the circles it finds (strongly connected groups of two or more modules, or a module
that imports itself), then the package's shape: its top-level modules and its largest files.
Exit status 1 when there is a circle, so a test or CI can hold the line.
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("specviz", "ui", "models", "pages")
LINE_LIMIT = 300  # a file over this says in its first line why it is one idea (docs/notes/ has the history)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports, anywhere in it (a function's import is a dependency too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # a submodule by its own name (from specviz.charts import block), else the module itself
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                     for a in node.names]  # fmt: skip
        else:
            continue
        for name in names:
            while name and name not in known:  # a name from a module, or a submodule: its module
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: imports(p, known) - {m} for m, p in mods.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of two or more modules, each sorted."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def shape() -> dict:
    """specviz's top-level modules (files directly in it) and the largest Python files of the project."""
    top = sorted(p.name for p in (ROOT / "specviz").glob("*.py"))
    sizes = sorted(((len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(ROOT)))
                    for p in modules().values()), reverse=True)  # fmt: skip
    return {"top_level_modules": top, "largest": sizes[:5], "over_limit": [s for s in sizes if s[0] > LINE_LIMIT]}


def main(argv: list[str]) -> int:
    if argv != ["imports"]:
        print("usage: python -m specviz.devtools imports", file=sys.stderr)
        return 2
    found = circles(graph())
    for group in found:
        print("circle: " + " -> ".join(group))
    s = shape()
    print(f"{len(found)} import circles; specviz/ has {len(s['top_level_modules'])} top-level modules "
          f"({', '.join(s['top_level_modules'])})")  # fmt: skip
    print("largest files: " + ", ".join(f"{path} ({n})" for n, path in s["largest"]))
    for n, path in s["over_limit"]:
        print(f"over {LINE_LIMIT} lines: {path} ({n})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
