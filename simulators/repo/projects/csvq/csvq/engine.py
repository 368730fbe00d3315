"""Run a parsed query over a table: filter, group, project, de-duplicate, sort, slice."""

from __future__ import annotations

import functools
from typing import Any

from csvq.errors import QueryError
from csvq.evaluator import Evaluator, contains_aggregate
from csvq.parser import parse
from csvq.syntax import Call, Column, Select, Star
from csvq.table import Table, load_csv


def _name(item_expr: Any, alias: str | None, index: int) -> str:
    if alias:
        return alias
    if isinstance(item_expr, Column):
        return item_expr.name
    if isinstance(item_expr, Call):
        return item_expr.name
    return f"col{index + 1}"


def _sort_key_cmp(a: tuple[Any, ...], b: tuple[Any, ...], desc: list[bool]) -> int:
    """Compare sort keys; NULLs sort first ascending (last descending)."""
    for x, y, d in zip(a, b, desc):
        if x == y:
            continue
        if x is None:
            result = -1
        elif y is None:
            result = 1
        else:
            result = -1 if x < y else 1
        return -result if d else result
    return 0


def _groups(query: Select, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    aggregated = any(contains_aggregate(i.expr) for i in query.items)
    if not query.group_by:
        return [rows] if aggregated else [[r] for r in rows]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = tuple(Evaluator(row).eval(e) for e in query.group_by)
        groups.setdefault(key, []).append(row)
    return list(groups.values())


def execute(query: Select, table: Table) -> Table:
    """The result table of ``query`` over ``table``."""
    rows = [{c.lower(): v for c, v in zip(table.columns, r)} for r in table.rows]
    if query.where is not None:
        rows = [r for r in rows if Evaluator(r).eval(query.where)]
    grouped = bool(query.group_by) or any(contains_aggregate(i.expr) for i in query.items)
    columns: list[str] = []
    for index, item in enumerate(query.items):
        if isinstance(item.expr, Star):
            if grouped:
                raise QueryError("SELECT * cannot be grouped")
            columns.extend(table.columns)
        else:
            columns.append(_name(item.expr, item.alias, index))
    out_rows: list[tuple[list[Any], tuple[Any, ...]]] = []
    for group in _groups(query, rows):
        first = group[0] if group else {}
        ev = Evaluator(first, group if grouped else None)
        values: list[Any] = []
        for item in query.items:
            if isinstance(item.expr, Star):
                values.extend(first[c.lower()] for c in table.columns)
            else:
                values.append(ev.eval(item.expr))
        aliases = {name.lower(): v for name, v in zip(columns, values)}
        key_ev = Evaluator(first, group if grouped else None, aliases)
        key = tuple(key_ev.eval(o.expr) for o in query.order_by)
        out_rows.append((values, key))
    if query.distinct:
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for values, key in out_rows:
            marker = tuple(values)
            if marker not in seen:
                seen.add(marker)
                unique.append((values, key))
        out_rows = unique
    if query.order_by:
        desc = [o.descending for o in query.order_by]
        out_rows.sort(key=functools.cmp_to_key(lambda a, b: _sort_key_cmp(a[1], b[1], desc)))
    start = query.offset
    stop = None if query.limit is None else start + query.limit
    return Table(columns, [values for values, _ in out_rows[start:stop]])


def query(source: str | Table, sql: str) -> Table:
    """Run ``sql`` over ``source`` (CSV text or a :class:`Table`)."""
    table = load_csv(source) if isinstance(source, str) else source
    return execute(parse(sql), table)
