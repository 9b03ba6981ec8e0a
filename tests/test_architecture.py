"""The import graph of ``advisor``: no module imports itself through others.

``lint-imports`` (``scripts/check``) keeps the rooms' rules; this test keeps the whole graph
free of circles at module level, so a new one fails the tests wherever it appears.
"""

from __future__ import annotations

import grimp


def _circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle_and_only_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]


def test_no_module_of_advisor_imports_itself_through_others():
    graph = grimp.build_graph("advisor", cache_dir=None)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    circles = _circles(imports)
    lines = [
        f"{a} -> {b} (line {d['line_number']})"
        for circle in circles
        for a in circle
        for b in sorted(imports[a] & set(circle))
        for d in graph.get_import_details(importer=a, imported=b)[:1]
    ]
    assert not circles, "import circles in advisor:\n" + "\n".join(lines)
