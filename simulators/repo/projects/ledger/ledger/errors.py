"""The ledger's errors."""


class LedgerError(Exception):
    """Base class of every error the ledger raises."""


class ValidationError(LedgerError, ValueError):
    """A value the ledger cannot store (a bad SKU, a negative quantity...)."""


class UnknownItem(LedgerError, KeyError):
    """No item has this SKU."""

    def __init__(self, sku: str):
        super().__init__(sku)
        self.sku = sku

    def __str__(self) -> str:
        return f"no item with SKU {self.sku!r}"


class InsufficientStock(LedgerError):
    """A shipment asks for more units than are on hand."""

    def __init__(self, sku: str, wanted: int, available: int):
        super().__init__(f"{sku}: wanted {wanted}, only {available} on hand")
        self.sku = sku
        self.wanted = wanted
        self.available = available
