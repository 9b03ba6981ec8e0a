"""The house's measures (issue 51): a reader finds a room by its door and reads any function
without scrolling. At most 22 top-level modules in ``advisor/``; no function over 120 lines;
a typer command (its option declarations counted) at most 150, what is left after its options
belonging below the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

ADVISOR = Path(__file__).resolve().parents[1] / "advisor"
MOST_LINES = 120
MOST_COMMAND_LINES = 150
MOST_TOP_MODULES = 22


def _is_command(fn: ast.FunctionDef) -> bool:
    """A typer command: one of its parameters is declared as a typer option or argument."""
    every = [*fn.args.args, *fn.args.kwonlyargs]
    return any(
        a.annotation is not None
        and any(k in ast.unparse(a.annotation) for k in ("Option", "Argument", "o."))
        for a in every
    )


def _long_functions(root: Path) -> list[tuple[str, int, int]]:
    """Every function over its limit: (module:name, lines, limit)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            command = "cli" in path.parts and isinstance(node, ast.FunctionDef)
            limit = MOST_COMMAND_LINES if command and _is_command(node) else MOST_LINES
            if lines > limit:
                found.append((f"{path.relative_to(root.parent)}:{node.name}", lines, limit))
    return found


def test_no_function_a_reader_must_scroll():
    assert _long_functions(ADVISOR) == []


def test_the_measure_finds_a_long_function_and_a_long_command(tmp_path: Path):
    pkg = tmp_path / "advisor"
    (pkg / "cli").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(125))
    (pkg / "core.py").write_text(f"def long():\n{body}\n\ndef short():\n    return 1\n")
    options = "".join(f"    a{i}: Annotated[int, typer.Option()] = {i},\n" for i in range(30))
    (pkg / "cli" / "cmd.py").write_text(
        f"def cmd(\n{options}) -> None:\n{body}\n\ndef helper():\n{body}"
    )
    found = {name: (lines, limit) for name, lines, limit in _long_functions(pkg)}
    assert found == {
        "advisor/core.py:long": (126, MOST_LINES),
        "advisor/cli/cmd.py:cmd": (157, MOST_COMMAND_LINES),
        "advisor/cli/cmd.py:helper": (126, MOST_LINES),
    }


def test_the_package_keeps_few_top_level_modules():
    modules = sorted(p.name for p in ADVISOR.glob("*.py"))
    assert len(modules) <= MOST_TOP_MODULES, modules
