"""The import layering of bkconform's packages, read from the source with :mod:`ast`.

Two rules, checked by ``tests/test_layering.py`` and printable with
``python tools/layering.py``:

* **Layers.** ``model`` imports nothing of ours, ``adapters`` imports ``model`` at most, and
  ``conformance`` may import both. An import from a lower layer into a higher one is reported
  with its file and line.
* **No cycles among siblings.** Inside a package, the children (sub-packages and modules)
  form an acyclic graph when an edge ``a -> b`` means "some file under ``a`` imports something
  under ``b``". A cycle is reported as a shortest way round through each child involved, with
  every import between those children grouped by edge, so whoever breaks it sees which lines
  to move. An import of the package itself (its ``__init__``) from one of its children is no
  edge between children.

Every ``import`` statement counts, wherever it stands: at module level, inside a function
(a lazy import only postpones the dependency, the two packages still need each other) and
under ``if TYPE_CHECKING:`` (the type checker follows it, and the annotation is a promise that
one package knows the other's types; a cycle through annotations is still a cycle).
Imports built from strings (``importlib.import_module``) are not seen.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Bottom to top: each layer may import the ones before it, never those after it.
LAYERS: tuple[str, ...] = ("model", "adapters", "conformance")

# The packages whose children must not import each other in a cycle.
ACYCLIC_PACKAGES: tuple[str, ...] = ("model", "adapters", "conformance")


@dataclass(frozen=True, order=True)
class ImportSite:
    """One module of ours named by one import statement."""

    path: Path
    line: int
    importer: str  # dotted name of the importing module
    imported: str  # dotted name of the module (or package) it imports

    def where(self, root: Path) -> str:
        try:
            shown = self.path.relative_to(root)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"


@dataclass(frozen=True)
class Cycle:
    """Children of one package that import each other, with the imports that do it."""

    package: str
    #: The children that reach each other (a strongly connected component), sorted.
    component: tuple[str, ...]
    #: A shortest cycle through each child of the component (first child repeated last),
    #: without repeats: one line to read per way round.
    paths: tuple[tuple[str, ...], ...]
    #: Every import from one child of the component to another: the lines to choose from.
    sites: tuple[ImportSite, ...]

    def describe(self, root: Path) -> str:
        lines = [f"cycle in {self.package}: {' -> '.join(path)}" for path in self.paths]
        if len(self.paths) > 1:
            lines.append(f"  (together: {', '.join(self.component)} reach each other)")
        edges: dict[tuple[str, str], list[ImportSite]] = {}
        for site in self.sites:
            edge = (_child_of(self.package, site.importer), _child_of(self.package, site.imported))
            edges.setdefault(edge, []).append(site)
        for (source, target), found in sorted(edges.items()):
            lines.append(f"  {source} -> {target}:")
            lines.extend(
                f"    {site.where(root)}: {site.importer} imports {site.imported}" for site in found
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class UpwardImport:
    """An import from a lower layer into a higher one."""

    site: ImportSite
    importer_layer: str
    imported_layer: str

    def describe(self, root: Path) -> str:
        return (
            f"upward import: {self.site.where(root)}: {self.site.importer} "
            f"({self.importer_layer}) imports {self.site.imported} ({self.imported_layer})"
        )


def module_name(root: Path, path: Path) -> str:
    """``adapters/cluster/local.py`` -> ``adapters.cluster.local``; a package is its
    ``__init__``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(root: Path, packages: Iterable[str]) -> Iterator[Path]:
    for package in packages:
        yield from sorted((root / package).rglob("*.py"))


def known_modules(root: Path, packages: Iterable[str]) -> frozenset[str]:
    """Every module and package (namespace packages included) under ``packages``."""
    names: set[str] = set()
    for path in source_files(root, packages):
        name = module_name(root, path)
        parts = name.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(names)


def _package_of(root: Path, path: Path) -> str:
    name = module_name(root, path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _absolute(root: Path, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = _package_of(root, path).split(".")
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(root: Path, path: Path, ours: frozenset[str]) -> Iterator[ImportSite]:
    """The modules of ours that ``path`` imports, one site per imported module and statement."""
    importer = module_name(root, path)
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(root, path, node)
            for alias in node.names:
                # `from adapters import cluster` imports the sub-package adapters.cluster;
                # `from adapters.cluster import LocalCluster` imports adapters.cluster.
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in ours else base)
        for target in dict.fromkeys(targets):
            if target in ours:
                yield ImportSite(path, node.lineno, importer, target)


def all_imports(root: Path, packages: Sequence[str] = LAYERS) -> list[ImportSite]:
    ours = known_modules(root, packages)
    return sorted(
        site for path in source_files(root, packages) for site in imports_of(root, path, ours)
    )


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def upward_imports(
    sites: Iterable[ImportSite], layers: Sequence[str] = LAYERS
) -> list[UpwardImport]:
    rank = {layer: index for index, layer in enumerate(layers)}
    found = []
    for site in sites:
        importer, imported = _top(site.importer), _top(site.imported)
        if importer in rank and imported in rank and rank[imported] > rank[importer]:
            found.append(UpwardImport(site, importer, imported))
    return found


def _child(package: str, name: str) -> str | None:
    """The child of ``package`` that ``name`` lies in, or None (outside, or the package itself)."""
    prefix = package + "."
    if not name.startswith(prefix):
        return None
    return prefix + name[len(prefix) :].split(".", 1)[0]


def _child_of(package: str, name: str) -> str:
    child = _child(package, name)
    if child is None:
        raise ValueError(f"{name} is not inside {package}")
    return child


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components in no particular order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _shortest_cycle(graph: Mapping[str, set[str]], start: str) -> tuple[str, ...]:
    """A shortest cycle from ``start`` back to it (breadth first), ``start`` repeated last."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph.get(node, ())):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return (*reversed(path), start)
                if successor not in came_from:
                    came_from[successor] = node
                    following.append(successor)
        frontier = following
    raise ValueError(f"{start} is on no cycle")


def _rotated_to_smallest(path: tuple[str, ...]) -> tuple[str, ...]:
    """The same cycle starting at its smallest child, so rotations compare equal."""
    ring = path[:-1]
    first = ring.index(min(ring))
    turned = ring[first:] + ring[:first]
    return (*turned, turned[0])


def cycles_among_children(package: str, sites: Iterable[ImportSite]) -> list[Cycle]:
    """The cycles among the direct children of ``package``."""
    graph: dict[str, set[str]] = {}
    edges: dict[tuple[str, str], list[ImportSite]] = {}
    for site in sites:
        source, target = _child(package, site.importer), _child(package, site.imported)
        if source is None or target is None or source == target:
            continue
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
        edges.setdefault((source, target), []).append(site)
    cycles = []
    for component in _strongly_connected(graph):
        if len(component) < 2:
            continue
        members = set(component)
        inside = {node: graph[node] & members for node in component}
        paths = dict.fromkeys(
            _rotated_to_smallest(_shortest_cycle(inside, node)) for node in component
        )
        sites_inside = sorted(
            site
            for (source, target), found in edges.items()
            if source in members and target in members
            for site in found
        )
        cycles.append(Cycle(package, tuple(component), tuple(paths), tuple(sites_inside)))
    return sorted(cycles, key=lambda cycle: cycle.component)


@dataclass(frozen=True)
class Report:
    upward: tuple[UpwardImport, ...]
    cycles: tuple[Cycle, ...]

    def describe(self, root: Path) -> str:
        parts = [found.describe(root) for found in self.upward]
        parts.extend(cycle.describe(root) for cycle in self.cycles)
        return "\n".join(parts) if parts else "no upward imports, no cycles"


def check(
    root: Path,
    layers: Sequence[str] = LAYERS,
    acyclic: Sequence[str] = ACYCLIC_PACKAGES,
) -> Report:
    """Upward imports between ``layers`` and cycles among the children of each of ``acyclic``."""
    wanted = dict.fromkeys((*layers, *acyclic))
    missing = [package for package in wanted if not (root / package).is_dir()]
    if missing:
        # A wrong root would otherwise find no imports at all, and so nothing wrong.
        raise FileNotFoundError(f"no package {', '.join(missing)} under {root}")
    sites = all_imports(root, layers)
    cycles = [cycle for package in acyclic for cycle in cycles_among_children(package, sites)]
    return Report(tuple(upward_imports(sites, layers)), tuple(cycles))


def main(argv: Sequence[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    report = check(root)
    print(report.describe(root))
    return 1 if report.upward or report.cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
