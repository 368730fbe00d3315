"""What the stock is worth: FIFO layers and average cost."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ledger.movements import history


@dataclass
class Layer:
    """Units received together at one unit cost, still on hand."""

    quantity: int
    unit_cost_cents: int


def fifo_layers(db: sqlite3.Connection, sku: str) -> list[Layer]:
    """The cost layers left after shipments and losses consumed the oldest units first.

    Units found by a positive adjustment are valued at the most recent receipt's cost
    (zero when nothing was ever received).
    """
    layers: list[Layer] = []
    last_cost = 0
    for move in history(db, sku):
        if move.kind == "receive":
            last_cost = move.unit_cost_cents or 0
            layers.append(Layer(move.quantity, last_cost))
        elif move.kind == "adjust" and move.quantity > 0:
            layers.append(Layer(move.quantity, last_cost))
        else:
            _consume(layers, abs(move.quantity))
    return [layer for layer in layers if layer.quantity > 0]


def _consume(layers: list[Layer], quantity: int) -> int:
    """Take ``quantity`` units from the oldest layers; return their total cost."""
    cost = 0
    for layer in layers:
        if quantity == 0:
            break
        take = min(layer.quantity, quantity)
        layer.quantity -= take
        quantity -= take
        cost += take * layer.unit_cost_cents
    return cost


def fifo_value(db: sqlite3.Connection, sku: str) -> int:
    """Cents the units on hand cost, first in, first out."""
    return sum(layer.quantity * layer.unit_cost_cents for layer in fifo_layers(db, sku))


def cost_of_goods_sold(db: sqlite3.Connection, sku: str) -> int:
    """Cents of cost that shipments took out of stock (FIFO); losses are not sales."""
    layers: list[Layer] = []
    last_cost = 0
    sold = 0
    for move in history(db, sku):
        if move.kind == "receive":
            last_cost = move.unit_cost_cents or 0
            layers.append(Layer(move.quantity, last_cost))
        elif move.kind == "adjust" and move.quantity > 0:
            layers.append(Layer(move.quantity, last_cost))
        elif move.kind == "ship":
            sold += _consume(layers, move.quantity)
        else:
            _consume(layers, -move.quantity)
    return sold


def average_cost(db: sqlite3.Connection, sku: str) -> int:
    """Weighted average cost of every unit ever received, rounded to the cent (0 if none)."""
    units = 0
    total = 0
    for move in history(db, sku):
        if move.kind == "receive":
            units += move.quantity
            total += move.quantity * (move.unit_cost_cents or 0)
    if units == 0:
        return 0
    return (total + units // 2) // units
