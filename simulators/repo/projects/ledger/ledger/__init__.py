"""ledger: an inventory ledger over SQLite."""

from ledger.errors import InsufficientStock, LedgerError, UnknownItem, ValidationError
from ledger.ledger import Ledger
from ledger.money import format_money, parse_money

__all__ = [
    "InsufficientStock",
    "Ledger",
    "LedgerError",
    "UnknownItem",
    "ValidationError",
    "format_money",
    "parse_money",
]
