"""JSON in and out of frozen dataclasses, checked against their type annotations.

A class is its own schema (as guidellm's pydantic models are): `from_json` reads a
parsed JSON object into the class, checking every value against the field's annotation
on the way, and names the first thing that does not fit (`levels[2].ttft_s.p50: must be
a number`). There is no second description of the file to keep in step.

JSON rules, the same for every class here:
- a field without a default is always written (`null` when it is None);
- a field made with `optional()` defaults to None and is absent from JSON when None;
- `flat()` nests a dataclass in Python but merges its keys into the parent's JSON,
  read back when its first field's key is present;
- `rest()` keeps keys the class does not model, so reading and writing a file keeps
  exactly its keys;
- `field(metadata=json_meta(...))` states what differs for one field: its JSON key
  (`key="pass"`), the value it reads as when absent (`absent=None`), or infinity written
  as null and null read back as infinity (`inf_null=True`);
- a class's `JSON_CONSTANTS` are written with every record and ignored on reading.

Types understood: int (`Count`: at least 0), float (finite; an int is accepted), str,
bool, None, `X | Y`, `Literal[...]`, `tuple[X, ...]`, `dict[str, Any]`, `Any`, another
JsonRecord, or a field with its own `decode` (its value must be an object). Numbers are
finite and below 2**63 (larger ints would become numpy object arrays downstream).
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import Field, field, fields
from typing import Annotated, Any, ClassVar, Literal, Self, Union

Count = Annotated[int, "count"]  # a whole number >= 0


class SchemaError(ValueError):
    """A JSON value that does not fit the class it is read into; the message names where."""


def optional(decode: Callable[[Any], Any] | None = None) -> Any:
    """A field that is None by default and absent from JSON when None."""
    return field(default=None, metadata={"optional": True, "decode": decode})


def _key(f: Field[Any]) -> str:
    return str(f.metadata.get("key", f.name))


def flat(cls: type[JsonRecord]) -> Any:
    """An optional dataclass whose keys are merged into the parent's JSON object."""
    return field(default=None, metadata={"optional": True, "flat": cls})


_REQUIRED = object()


def json_meta(
    *,
    key: str | None = None,
    absent: Any = _REQUIRED,
    inf_null: bool = False,
    aliases: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A field's metadata when its JSON differs from the rule (`field(metadata=...)`):
    another key, former keys still read (a file written before a rename stays readable),
    a value when the key is absent, or infinity as null (both ways)."""
    meta: dict[str, Any] = {"inf_null": inf_null, "aliases": aliases}
    if key is not None:
        meta["key"] = key
    if absent is not _REQUIRED:
        meta["absent"] = absent
    return meta


def rest() -> Any:
    """The keys this class does not model, kept as they were read."""
    return field(default_factory=dict, metadata={"rest": True})


def _encode(v: object) -> object:
    if hasattr(v, "to_json"):
        return v.to_json()
    if isinstance(v, list | tuple):
        return [_encode(x) for x in v]
    return v


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    return _HINTS[cls]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**63


def _scalar(tp: object, v: object) -> tuple[bool, str]:
    """(fits, what the type accepts) for the leaf types."""
    if tp is int:
        return _is_int(v), "a whole number"
    if tp is float:
        ok = _is_int(v) or (isinstance(v, float) and math.isfinite(v))
        return ok, "a finite number"
    if tp is str:
        return isinstance(v, str), "text"
    if tp is bool:
        return isinstance(v, bool), "true or false"
    if tp is type(None):
        return v is None, "null"
    raise TypeError(f"jsonrecord: no rule for {tp!r}")


def _decode(tp: object, v: object, where: str) -> Any:
    """v read as type tp (lists become tuples, objects records); SchemaError if it does not fit."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return v
    if origin is Annotated:
        base, *meta = typing.get_args(tp)
        out = _decode(base, v, where)
        if "count" in meta and out < 0:
            raise SchemaError(f"{where}: must be a count (a whole number >= 0)")
        return out
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if v is None and type(None) in args:
            return None
        real = [a for a in args if a is not type(None)]
        for a in real[:-1]:
            try:
                return _decode(a, v, where)
            except SchemaError:
                pass
        return _decode(real[-1], v, where)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if v not in allowed or isinstance(v, bool) != isinstance(allowed[0], bool):
            raise SchemaError(f"{where}: must be one of {', '.join(map(repr, allowed))}")
        return v
    if origin is tuple:
        if not isinstance(v, list):
            raise SchemaError(f"{where}: must be a list")
        item = typing.get_args(tp)[0]
        return tuple(_decode(item, x, f"{where}[{i}]") for i, x in enumerate(v))
    if origin is dict:
        if not isinstance(v, dict):
            raise SchemaError(f"{where}: must be an object")
        return v
    if isinstance(tp, type) and issubclass(tp, JsonRecord):
        return tp.from_json(v, where)
    ok, what = _scalar(tp, v)
    if not ok:
        raise SchemaError(f"{where}: must be {what}")
    return v


def _custom(decode: Callable[[Any], object], v: object, where: str) -> object:
    """A field read by its own decoder (e.g. an engine-bench result): an object, then decode."""
    if v is None:
        return None
    if not isinstance(v, dict | list):
        raise SchemaError(f"{where}: must be an object")
    try:
        return decode(v)
    except SchemaError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise SchemaError(f"{where}: not readable (missing or wrong {e})") from e


class JsonRecord:
    """to_json / from_json by the rules in the module docstring, for frozen dataclasses."""

    __slots__ = ()
    JSON_CONSTANTS: ClassVar[dict[str, Any]] = {}  # written with every record, never read

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            m = f.metadata
            if m.get("rest"):
                out.update(v)
            elif v is None and m.get("optional"):
                continue
            elif "flat" in m:
                out.update(v.to_json())
            elif m.get("inf_null") and isinstance(v, float) and math.isinf(v):
                out[_key(f)] = None
            else:
                out[_key(f)] = _encode(v)
        return {**out, **self.JSON_CONSTANTS}

    @classmethod
    def known_keys(cls) -> set[str]:
        keys: set[str] = set(cls.JSON_CONSTANTS)
        for f in fields(cls):  # type: ignore[arg-type]
            if "flat" in f.metadata:
                keys |= f.metadata["flat"].known_keys()
            elif not f.metadata.get("rest"):
                keys |= {_key(f), *f.metadata.get("aliases", ())}
        return keys

    @classmethod
    def from_json(cls, d: object, where: str = "") -> Self:
        """The record, every value checked; a missing optional key reads as None.

        Raises SchemaError naming the first key that is missing or does not fit, then
        whatever `problem()` finds in the whole record."""
        if not isinstance(d, dict):
            raise SchemaError(f"{where or cls.__name__}: must be an object")
        hints, kw = _hints(cls), dict[str, Any]()
        for f in fields(cls):  # type: ignore[arg-type]
            m = f.metadata
            k = _key(f)
            if m.get("rest"):
                known = cls.known_keys()
                kw[f.name] = {k: v for k, v in d.items() if k not in known}
            elif "flat" in m:
                sub = m["flat"]
                kw[f.name] = sub.from_json(d, where) if fields(sub)[0].name in d else None
            elif (key := _found(f, d)) is not None:
                at = f"{where}.{key}" if where else key
                kw[f.name] = _field(m, hints[f.name], d[key], at)
            elif "absent" in m:
                kw[f.name] = m["absent"]
            elif not m.get("optional"):
                raise SchemaError(f"{where}: no '{k}'" if where else f"no '{k}'")
        record = cls(**kw)
        problem = record.problem()
        if problem:
            raise SchemaError(f"{where or cls.__name__}: {problem}")
        return record

    def problem(self) -> str | None:
        """What is wrong with the record as a whole (values that fit but disagree); None: fine."""
        return None


def _field(m: Mapping[str, Any], tp: object, v: object, at: str) -> object:
    """One field's value read by its metadata: null as infinity, its own decoder, or its type."""
    if m.get("inf_null") and v is None:
        return math.inf
    decode = m.get("decode")
    if decode is not None and not _plain(tp):
        return _custom(decode, v, at)
    return _decode(tp, v, at)


def _found(f: Field[Any], d: dict[str, Any]) -> str | None:
    """The key a field is read from: its own, else a former name; None when absent."""
    return next((k for k in (_key(f), *f.metadata.get("aliases", ())) if k in d), None)


def _plain(tp: object) -> bool:
    """True when the annotation alone says how to read the value (no custom decoder needed)."""
    if tp is Any or tp in (int, float, str, bool, type(None)):
        return True
    origin = typing.get_origin(tp)
    if origin is Literal:
        return True
    if origin is Annotated:
        return _plain(typing.get_args(tp)[0])
    if origin is not None:
        return all(_plain(a) for a in typing.get_args(tp) if a is not Ellipsis)
    return isinstance(tp, type) and issubclass(tp, JsonRecord)
