"""No import cycles in the package: a registry sits where its members do not import it back (issue 45).

grimp (import-linter's graph library) reads every import, those inside functions included, since a lazy import
that closes a circle is still a circle a newcomer has to untangle. A cycle fails with its modules named."""

from __future__ import annotations

import grimp

import onnxport


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (and a module importing itself), each sorted:
    Tarjan's algorithm, iterative so that a deep chain of imports cannot reach Python's recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.find_modules_directly_imported_by(target)))))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1 or graph.direct_import_exists(importer=module, imported=module):
                    found.append(sorted(component))
    return sorted(found)


def describe(graph: grimp.ImportGraph, component: list[str]) -> str:
    """One cycle: its modules, then each import between them with its line."""
    lines = [" <-> ".join(component)]
    for importer in component:
        for imported in component:
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"    {importer} -> {imported} (line {detail['line_number']}: {detail['line_contents']})")
    return "\n".join(lines)


def test_the_package_has_no_import_cycle():
    graph = grimp.build_graph(onnxport.__name__, cache_dir=None)
    found = cycles(graph)
    assert not found, f"{len(found)} import cycle(s) in the package:\n" + "\n".join(
        describe(graph, component) for component in found
    )


def test_the_cycle_finder_names_each_circle_and_only_those():
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.registry", "pkg.one", "pkg.two", "pkg.base", "pkg.self"):
        graph.add_module(module)
    for importer, imported in (
        ("pkg.registry", "pkg.one"),
        ("pkg.one", "pkg.registry"),
        ("pkg.registry", "pkg.two"),
        ("pkg.two", "pkg.base"),
        ("pkg.one", "pkg.base"),
        ("pkg.self", "pkg.self"),
    ):
        graph.add_import(importer=importer, imported=imported)
    assert cycles(graph) == [["pkg.one", "pkg.registry"], ["pkg.self"]]
    graph.remove_import(importer="pkg.one", imported="pkg.registry")
    assert cycles(graph) == [["pkg.self"]]
