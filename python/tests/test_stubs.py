"""python/memkv/_memkv.pyi against the bindings: every client option of the
table (memkv.client_options(), read from libmemkv at run time) is a
parameter of Client.__init__ in the stub, typed as the bindings take it, and
the stub names no option the table lacks. An option added to the table
without its stub line fails here."""

import ast
import os
from typing import Dict, List, Set

import pytest

import memkv

STUB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "memkv", "_memkv.pyi")

# What memkv.Client takes for an option of each table type (python/src/options.cc):
# None (the default) always; a list option a list of str or one comma-separated
# str; an integer option an int (a str is a TypeError); "auto or integer" an int
# or its text; a number a float or its text; every other type its text.
TAKES = {
    "list": {"str", "Sequence[str]"},
    "integer": {"int"},
    "auto or integer": {"str", "int"},
    "number": {"str", "float"},
}
TEXT = {"str"}
# Beyond its table type: log_level also takes the int levels (memkv.LOG_*).
ALSO = {"log_level": {"int"}}
# Client keywords that are not table options.
NOT_OPTIONS = {"self", "log_callback", "identity"}


def _stub_init() -> ast.FunctionDef:
    with open(STUB, encoding="utf-8") as f:
        tree = ast.parse(f.read(), STUB)
    client = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Client")
    return next(n for n in client.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")


def _members(annotation: ast.expr) -> Set[str]:
    """The types a parameter's annotation admits: Union[...] and Optional[...]
    flattened, each member as written ("int", "Sequence[str]", "None")."""
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in ("Union", "Optional"):
        inner = annotation.slice
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        out = {"None"} if ast.unparse(annotation.value) == "Optional" else set()
        for part in parts:
            out |= _members(part)
        return out
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # int | None
        return _members(annotation.left) | _members(annotation.right)
    return {ast.unparse(annotation)}


def stub_parameters() -> Dict[str, Set[str]]:
    """Client.__init__'s parameters in the stub (positional and keyword-only) -> admitted types."""
    init = _stub_init()
    params: List[ast.arg] = init.args.posonlyargs + init.args.args + init.args.kwonlyargs
    out = {}
    for p in params:
        if p.arg in NOT_OPTIONS:
            continue
        assert p.annotation is not None, f"_memkv.pyi: Client.__init__'s {p.arg} has no type"
        out[p.arg] = _members(p.annotation)
    return out


def expected(row: Dict) -> Set[str]:
    return TAKES.get(row["type"], TEXT) | ALSO.get(row["name"], set()) | {"None"}


def test_the_stub_lists_every_option_of_the_table():
    table = [row["name"] for row in memkv.client_options()]
    stub = stub_parameters()
    missing = [name for name in table if name not in stub]
    extra = [name for name in stub if name not in table]
    assert not missing, f"options of the table without a Client.__init__ parameter in _memkv.pyi: {missing}"
    assert not extra, f"Client.__init__ parameters in _memkv.pyi that are no option of the table: {extra}"
    assert list(stub) == table, "_memkv.pyi lists the options in the table's order (docs/configuration.md)"


@pytest.mark.parametrize("row", memkv.client_options(), ids=lambda row: row["name"])
def test_each_option_has_the_type_the_bindings_take(row):
    got = stub_parameters()[row["name"]]
    assert got == expected(row), f"_memkv.pyi types {row['name']} ({row['type']}) as {sorted(got)}"


def test_every_table_type_is_known():
    """A row of a new type needs its Python type decided, here and in options.cc."""
    known = set(TAKES) | {"string", "choice", "host:port"}
    assert {row["type"] for row in memkv.client_options()} <= known


def test_the_check_fails_for_an_option_the_stub_lacks(monkeypatch):
    """The comparison itself: a table with one more row than the stub is reported, naming the row."""
    rows = memkv.client_options() + [{"name": "made_up_ms", "type": "integer"}]
    monkeypatch.setattr(memkv, "client_options", lambda: rows)
    with pytest.raises(AssertionError, match="made_up_ms"):
        test_the_stub_lists_every_option_of_the_table()
