"""``replace`` for the core's frozen aggregates, at a fraction of ``dataclasses.replace``'s cost.

Every event an aggregate folds (``evolve``) makes a changed copy of a frozen dataclass, a
WorkItem of some forty fields several times per command. ``dataclasses.replace`` collects
every field into keyword arguments and calls ``__init__``, which sets them one by one again:
a sixth of a sweep's CPU went there (docs/benchmarks.md, "Where the time goes"). For a
dataclass whose fields all go through ``__init__`` unchanged (no ``__post_init__``, no
``init=False`` field, which is what the core's aggregates are) the copy is the same object
built directly; anything else goes to ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any

_set = object.__setattr__


def replace[T](obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace(obj, **changes)``, the same result and the same ``TypeError``
    for a name that is not a field."""
    copier = _copier(type(obj))
    if copier is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    return copier(obj, changes)


Copier = Callable[[Any, dict[str, Any]], Any]


@cache
def _copier(cls: type) -> Copier | None:
    """A function that copies an instance of ``cls`` with changes, setting each field
    directly, or ``None`` when a copy must go through ``__init__`` (``__post_init__``, an
    ``init=False`` field). It is written out field by field once per class: a loop over
    the fields with ``getattr`` cost as much as ``dataclasses.replace`` saved."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if any(not field.init for field in fields):
        return None
    names = [field.name for field in fields]
    if not all(name.isidentifier() for name in names):
        return None
    lines = [
        "def copy(obj, changes):",
        "    if not changes.keys() <= NAMES:",
        "        raise TypeError(f'{CLS.__name__}.__init__() got an unexpected keyword "
        "argument {sorted(changes.keys() - NAMES)[0]!r}')",
        "    new = NEW(CLS)",
        *(
            f"    SET(new, {name!r}, changes[{name!r}] if {name!r} in changes else obj.{name})"
            for name in names
        ),
        "    return new",
    ]
    scope = {"NAMES": frozenset(names), "CLS": cls, "NEW": object.__new__, "SET": _set}
    exec("\n".join(lines), scope)  # noqa: S102 (the source is built from the class's own field names)
    return scope["copy"]
