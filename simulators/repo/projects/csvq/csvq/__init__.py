"""csvq: SQL-like queries over CSV text."""

from csvq.engine import query
from csvq.errors import QueryError, QuerySyntaxError
from csvq.table import Table, load_csv

__all__ = ["QueryError", "QuerySyntaxError", "Table", "load_csv", "query"]
