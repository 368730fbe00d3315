"""Tool-using customer service (tau-bench style) over a real SQLite database.

Each episode builds an in-memory SQLite store (users, orders, items) from a seed. The
customer has a goal (cancel a pending order, change a shipping address, return a delivered
item) and holds the facts needed for it (their email, the order number, the reason, the new
address, the item). The agent has domain tools with policies:

* authenticate first: ``find_user(email)`` must have found the customer before any order is
  read or changed, and only that customer's orders may be touched;
* ``cancel_order`` only for ``pending`` orders, with a reason from a fixed list;
* ``update_address`` only for ``pending`` or ``processing`` orders;
* ``return_item`` only for items of ``delivered`` orders.

A policy breach changes nothing and costs a ``policy`` penalty. The goal state is computed
at reset by applying the intended change to a copy of the database. The customer ends the
chat only when the database really is in the goal state *and* the facts they must hear
(e.g. the refund amount) were said; claiming success early gets a complaint. Outcome:
final database equals the goal database and the required facts were communicated.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from agentgym.simulators.users.core import (
    Decision,
    Dialogue,
    Fact,
    FactUser,
    Opening,
    ToolResult,
    UserTurn,
)
from agentgym.simulators.users.text import mentions_number, tokens
from agentgym.simulators.users.wording import WordingBackend

from agentgym.parsing import Tool

SCHEMA = """
CREATE TABLE users (user_id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE NOT NULL,
                    zip TEXT NOT NULL);
CREATE TABLE orders (order_id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(user_id),
                     status TEXT NOT NULL, address TEXT NOT NULL, total REAL NOT NULL,
                     cancel_reason TEXT);
CREATE TABLE items (item_id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(order_id),
                    product TEXT NOT NULL, price REAL NOT NULL, status TEXT NOT NULL);
"""

FIRST = (
    "Ana",
    "Ben",
    "Chen",
    "Dara",
    "Eli",
    "Fatima",
    "Goran",
    "Hana",
    "Ivan",
    "Jia",
    "Kofi",
    "Lena",
    "Mateo",
    "Noor",
    "Omar",
    "Priya",
)
LAST = ("Silva", "Novak", "Kim", "Okafor", "Rossi", "Haddad", "Berg", "Tanaka", "Lopez", "Singh")
PRODUCTS = (
    "blue jacket",
    "running shoes",
    "desk lamp",
    "coffee grinder",
    "yoga mat",
    "wool scarf",
    "bluetooth speaker",
    "water bottle",
    "backpack",
    "phone case",
    "hiking boots",
    "table fan",
)
STREETS = ("Oak Street", "Pine Avenue", "Maple Road", "Cedar Lane", "Elm Court", "Birch Way")
CITIES = ("Springfield", "Riverton", "Lakeside", "Hillview")
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
GOALS = ("cancel", "address", "return")

POLICY = (
    "Authentication: before reading or changing any order, find the customer with "
    "find_user(email). Only that customer's orders may be read or changed.",
    "Cancellation: only pending orders can be cancelled, with reason 'no longer needed' or "
    "'ordered by mistake'. The full order total is refunded; tell the customer the amount.",
    "Address change: update_address works for pending or processing orders only.",
    "Returns: items of delivered orders can be returned with return_item; the item price is "
    "refunded; tell the customer the amount.",
    "Closing: only end the conversation (answer) once the request is done.",
)


def _tool(name: str, description: str, props: dict[str, Any]) -> Tool:
    return Tool(
        name,
        description,
        {
            "type": "object",
            "properties": props,
            "required": list(props),
            "additionalProperties": False,
        },
    )


_STR = {"type": "string"}
SERVICE_TOOLS = (
    _tool(
        "find_user",
        "Find a customer by the email on their account (authenticates them).",
        {"email": _STR},
    ),
    _tool("list_orders", "List the authenticated customer's orders.", {"user_id": _STR}),
    _tool(
        "get_order",
        "Show an order of the authenticated customer, with its items.",
        {"order_id": _STR},
    ),
    _tool(
        "cancel_order",
        "Cancel a pending order.",
        {"order_id": _STR, "reason": {"type": "string", "enum": list(CANCEL_REASONS)}},
    ),
    _tool(
        "update_address",
        "Change the shipping address of a pending or processing order.",
        {"order_id": _STR, "address": _STR},
    ),
    _tool(
        "return_item",
        "Return one item of a delivered order (refunds its price).",
        {"order_id": _STR, "item_id": _STR},
    ),
)


class PolicyError(Exception):
    """A tool call the store's policies forbid (nothing changes)."""


class Store:
    """The shop's SQLite database and its domain operations (policies enforced)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.authenticated: str | None = None
        self._dump: tuple[int, tuple[tuple[Any, ...], ...]] | None = None

    @classmethod
    def empty(cls) -> Store:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.executescript(SCHEMA)
        return cls(conn)

    def copy(self) -> Store:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn.backup(conn)
        other = Store(conn)
        other.authenticated = self.authenticated
        return other

    def close(self) -> None:
        self.conn.close()

    def dump(self) -> tuple[tuple[Any, ...], ...]:
        """Every row of every table, sorted: the state compared with the goal.

        Cached until the next write (``total_changes`` counts every changed row).
        """
        changes = self.conn.total_changes
        if self._dump is not None and self._dump[0] == changes:
            return self._dump[1]
        rows: list[tuple[Any, ...]] = []
        for table in ("users", "orders", "items"):
            cur = self.conn.execute(f"SELECT * FROM {table} ORDER BY 1")
            rows.extend((table, *r) for r in cur.fetchall())
        self._dump = (changes, tuple(rows))
        return self._dump[1]

    def _order(self, order_id: str) -> tuple[str, str, str, float]:
        if self.authenticated is None:
            raise PolicyError("authenticate the customer with find_user(email) first.")
        oid = order_id.strip().lstrip("#").upper()
        row = self.conn.execute(
            "SELECT order_id, user_id, status, total FROM orders WHERE order_id = ?", (oid,)
        ).fetchone()
        if row is None:
            raise LookupError(f"no order {order_id!r}.")
        if row[1] != self.authenticated:
            raise PolicyError("that order belongs to another customer.")
        return row[0], row[1], row[2], float(row[3])

    def find_user(self, email: str) -> str:
        row = self.conn.execute(
            "SELECT user_id, name FROM users WHERE lower(email) = lower(?)", (email.strip(),)
        ).fetchone()
        if row is None:
            raise LookupError(f"no customer with email {email[:80]!r}.")
        self.authenticated = row[0]
        return f"Found customer {row[1]} (user_id {row[0]}). They are now authenticated."

    def list_orders(self, user_id: str) -> str:
        if self.authenticated is None:
            raise PolicyError("authenticate the customer with find_user(email) first.")
        if user_id.strip() != self.authenticated:
            raise PolicyError("you may only list the authenticated customer's orders.")
        rows = self.conn.execute(
            "SELECT order_id, status, total FROM orders WHERE user_id = ? ORDER BY 1", (user_id,)
        ).fetchall()
        return "Orders: " + "; ".join(f"#{o} {s} ${t:.2f}" for o, s, t in rows)

    def get_order(self, order_id: str) -> str:
        oid, _, status, total = self._order(order_id)
        addr = self.conn.execute(
            "SELECT address FROM orders WHERE order_id = ?", (oid,)
        ).fetchone()[0]
        items = self.conn.execute(
            "SELECT item_id, product, price, status FROM items WHERE order_id = ? ORDER BY 1",
            (oid,),
        ).fetchall()
        lines = [f"  {i} {p} ${pr:.2f} ({st})" for i, p, pr, st in items]
        return f"Order #{oid}: {status}, total ${total:.2f}, ship to {addr}\n" + "\n".join(lines)

    def cancel_order(self, order_id: str, reason: str) -> str:
        oid, _, status, total = self._order(order_id)
        if status != "pending":
            raise PolicyError(f"order #{oid} is {status}; only pending orders can be cancelled.")
        with self.conn:
            self.conn.execute(
                "UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE order_id = ?",
                (reason, oid),
            )
            self.conn.execute("UPDATE items SET status = 'cancelled' WHERE order_id = ?", (oid,))
        return f"Order #{oid} cancelled ({reason}). Refund of ${total:.2f} issued."

    def update_address(self, order_id: str, address: str) -> str:
        oid, _, status, _ = self._order(order_id)
        if status not in ("pending", "processing"):
            raise PolicyError(f"order #{oid} is {status}; its address can no longer change.")
        if not address.strip() or len(address) > 200:
            raise ValueError("the address must be 1-200 characters.")
        with self.conn:
            self.conn.execute(
                "UPDATE orders SET address = ? WHERE order_id = ?", (" ".join(address.split()), oid)
            )
        return f"Order #{oid} will ship to {' '.join(address.split())}."

    def return_item(self, order_id: str, item_id: str) -> str:
        oid, _, status, _ = self._order(order_id)
        if status != "delivered":
            raise PolicyError(f"order #{oid} is {status}; only delivered orders take returns.")
        row = self.conn.execute(
            "SELECT price, status FROM items WHERE item_id = ? AND order_id = ?",
            (item_id.strip().upper(), oid),
        ).fetchone()
        if row is None:
            raise LookupError(f"order #{oid} has no item {item_id!r}.")
        if row[1] != "delivered":
            raise PolicyError(f"item {item_id} is already {row[1]}.")
        with self.conn:
            self.conn.execute(
                "UPDATE items SET status = 'returned' WHERE item_id = ?", (item_id.strip().upper(),)
            )
        return f"Item {item_id.strip().upper()} returned. Refund of ${row[0]:.2f} issued."


def build_store(rng: np.random.Generator) -> Store:
    """A seeded shop: 6 customers with 2-3 orders of 1-3 items each, mixed statuses."""
    store = Store.empty()
    names = rng.choice(len(FIRST), size=6, replace=False)
    order_no = int(rng.integers(1000, 9000))
    item_no = 1
    with store.conn:
        for u, ni in enumerate(names):
            first, last = FIRST[int(ni)], LAST[int(rng.integers(len(LAST)))]
            uid = f"U{u + 1:02d}"
            email = f"{first.lower()}.{last.lower()}{int(rng.integers(10, 99))}@example.com"
            store.conn.execute(
                "INSERT INTO users VALUES (?, ?, ?, ?)",
                (uid, f"{first} {last}", email, f"{int(rng.integers(10000, 99999))}"),
            )
            statuses = ["pending", "processing", "delivered"]
            rng.shuffle(statuses)
            for status in statuses[: int(rng.integers(2, 4))]:
                oid = f"W{order_no}"
                order_no += int(rng.integers(1, 50))
                addr = (
                    f"{int(rng.integers(1, 300))} {STREETS[int(rng.integers(len(STREETS)))]}"
                    f", {CITIES[int(rng.integers(len(CITIES)))]}"
                )
                n_items = int(rng.integers(1, 4))
                prods = rng.choice(len(PRODUCTS), size=n_items, replace=False)
                total = 0.0
                store.conn.execute(
                    "INSERT INTO orders VALUES (?, ?, ?, ?, 0, NULL)", (oid, uid, status, addr)
                )
                for p in prods:
                    price = float(int(rng.integers(900, 15000))) / 100
                    total += price
                    store.conn.execute(
                        "INSERT INTO items VALUES (?, ?, ?, ?, ?)",
                        (f"I{item_no:03d}", oid, PRODUCTS[int(p)], price, status),
                    )
                    item_no += 1
                store.conn.execute(
                    "UPDATE orders SET total = ? WHERE order_id = ?", (round(total, 2), oid)
                )
    return store


class CustomerUser(FactUser):
    """A customer who reveals account and order facts when asked and ends only when served."""

    def __init__(
        self,
        dialogue: ServiceDialogue,
        facts: list[Fact],
        *,
        wording: WordingBackend | None = None,
        patience: int = 8,
    ):
        super().__init__(
            "A customer contacting an online shop; brief and a bit impatient.",
            facts,
            wording=wording,
            patience=patience,
        )
        self.dialogue = dialogue
        self.heard: set[str] = set()

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.heard = set()

    def match(self, message: str, toks: Any) -> list[str]:
        cleaned = re.sub(r"e-?mail\s+address", "email", message, flags=re.IGNORECASE)
        return super().match(cleaned, tokens(cleaned))

    def note_heard(self, message: str) -> None:
        """Record required facts (amounts) the agent has said."""
        for name, amount in self.dialogue.required.items():
            if mentions_number(message, amount):
                self.heard.add(name)

    def satisfied(self) -> bool:
        return self.dialogue.goal_met() and set(self.dialogue.required) <= self.heard

    def _decide(self, message: str, toks: list[str]) -> Decision:
        self.note_heard(message)
        if self.satisfied():
            return Decision("Great, that's everything I needed. Thanks, bye!", stop=True)
        decision = super()._decide(message, toks)
        if self.dialogue.goal_met() and not decision.revealed:
            missing = set(self.dialogue.required) - self.heard
            if missing:
                decision.text = "Thanks. How much money will I get back?"
        return decision

    def state(self) -> Any:
        return {**super().state(), "heard": sorted(self.heard)}


class ServiceDialogue(Dialogue):
    """A customer with a goal, a SQLite shop, and domain tools with policies."""

    extra_tools = SERVICE_TOOLS
    search_help = "search(query): search the shop's policy handbook."
    answer_help = (
        "answer(answer): your closing message; ends the chat only if the customer is fully served."
    )

    def start(self, task_seed: int, user_seed: int) -> Opening:
        rng = np.random.default_rng(task_seed)
        self.store = build_store(rng)
        self.goal = GOALS[int(rng.integers(len(GOALS)))]
        want_status = {
            "cancel": ("pending",),
            "address": ("pending", "processing"),
            "return": ("delivered",),
        }[self.goal]
        rows = self.store.conn.execute(
            "SELECT o.order_id, o.user_id, o.total, u.email FROM orders o "
            "JOIN users u USING (user_id) WHERE o.status IN (?, ?) ORDER BY 1",
            (want_status[0], want_status[-1]),
        ).fetchall()
        oid, uid, total, email = rows[int(rng.integers(len(rows)))]
        self.order_id, self.user_id, self.email = oid, uid, email
        items = self.store.conn.execute(
            "SELECT item_id, product, price FROM items WHERE order_id = ? ORDER BY 1", (oid,)
        ).fetchall()
        item_id, product, price = items[int(rng.integers(len(items)))]
        self.item_id = item_id
        self.reason = CANCEL_REASONS[int(rng.integers(len(CANCEL_REASONS)))]
        self.new_address = (
            f"{int(rng.integers(1, 300))} "
            f"{STREETS[int(rng.integers(len(STREETS)))]}, "
            f"{CITIES[int(rng.integers(len(CITIES)))]}"
        )
        self.required: dict[str, float] = {}
        goal_store = self.store.copy()
        goal_store.authenticated = uid
        if self.goal == "cancel":
            goal_store.cancel_order(oid, self.reason)
            self.required = {"refund": round(float(total), 2)}
        elif self.goal == "address":
            goal_store.update_address(oid, self.new_address)
        else:
            goal_store.return_item(oid, item_id)
            self.required = {"refund": round(float(price), 2)}
        self.goal_rows = goal_store.dump()
        goal_store.close()

        facts = [
            Fact(
                "email",
                email,
                ("email", "mail", "account", "verify", "identify"),
                (f"My email is {email}.",),
                (f"You can find me under {email}.",),
                1.0,
                "Could you tell me the email on your account?",
                "my account email",
            ),
            Fact(
                "order",
                oid,
                ("order", "number"),
                (f"It's order #{oid}.",),
                (f"The order number is #{oid}, the one with the {product}.",),
                1.0,
                "Which order is it? Please give me the order number.",
                "which order",
            ),
        ]
        if self.goal == "cancel":
            facts.append(
                Fact(
                    "reason",
                    self.reason,
                    ("why", "reason"),
                    (f"The reason: {self.reason}.",),
                    (),
                    1.0,
                    "Why would you like to cancel it?",
                    "the reason",
                )
            )
        elif self.goal == "address":
            facts.append(
                Fact(
                    "address",
                    self.new_address,
                    ("address", "ship", "shipping", "deliver", "delivery", "where"),
                    (f"Please send it to {self.new_address}.",),
                    (),
                    1.0,
                    "What is the new shipping address?",
                    "the new address",
                )
            )
        else:
            facts.append(
                Fact(
                    "item",
                    product,
                    ("item", "product", "return", "back"),
                    (f"I want to return the {product}.",),
                    (),
                    1.0,
                    "Which item would you like to return?",
                    "the item",
                )
            )
        self.user = CustomerUser(self, facts, wording=self.wording, patience=10)
        self.user.reset(seed=user_seed)
        self.false_claims = 0
        self.reached = False
        self.success = self.done = False
        opening = {
            "cancel": ("Hi, I need to cancel an order.", "Hello, please cancel my order."),
            "address": (
                "Hi, I need to change the shipping address on my order.",
                "Hello, my order should go to a different address.",
            ),
            "return": (
                "Hi, I want to return something I bought.",
                "Hello, I'd like to send an item back.",
            ),
        }[self.goal]
        instruction = (
            "Serve the customer: authenticate them, follow the shop's policies, "
            "make the change they need with the tools, and tell them what they need "
            "to know."
        )
        return Opening(instruction, self.user.choose(opening))

    def goal_met(self) -> bool:
        return self.store.dump() == self.goal_rows

    def _finish(self, turn: UserTurn) -> None:
        if turn.stop:
            self.done = True
            user = self.user
            assert isinstance(user, CustomerUser)
            self.success = user.satisfied()

    def talk(self, message: str) -> UserTurn:
        turn = self.user.respond(message)
        self._finish(turn)
        if turn.stop:
            turn = replace(turn, scores={**turn.scores, "outcome": 1.0 if self.success else 0.0})
        return turn

    def search(self, query: str) -> ToolResult:
        words = set(tokens(query))
        hits = [p for p in POLICY if words.intersection(tokens(p))] or list(POLICY)
        return ToolResult("Policy handbook:\n- " + "\n- ".join(hits))

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        before = self.goal_met()
        op = getattr(self.store, name, None)
        if name not in {t.name for t in SERVICE_TOOLS} or op is None:
            return ToolResult(f"Unknown tool {name!r}.", valid=False)
        try:
            text = op(**{k: str(v) for k, v in arguments.items()})
            scores: dict[str, float] = {}
        except PolicyError as exc:
            return ToolResult(
                f"Policy violation: {exc}", scores={"policy": -1.0}, flags=("policy",)
            )
        except (LookupError, ValueError) as exc:
            msg = exc.args[0] if exc.args else str(exc)
            return ToolResult(f"Error: {msg}", flags=("tool_error",))
        if self.goal_met() and not before and not self.reached:
            self.reached = True
            scores["tool"] = 1.0
        return ToolResult(text, scores=scores)

    def answer(self, answer: str) -> ToolResult:
        user = self.user
        assert isinstance(user, CustomerUser)
        user.note_heard(answer)
        if user.satisfied():
            self.done = self.success = True
            user.stopped = True
            return ToolResult(
                "User: Perfect, thanks for your help. Bye!",
                scores={"outcome": 1.0},
                stop=True,
                success=True,
            )
        if self.goal_met():
            return ToolResult("User: Wait - how much money will I get back?")
        self.false_claims += 1
        if self.false_claims >= 2:
            self.done = True
            user.stopped = True
            return ToolResult(
                "User: It's still not done. I'll call someone else. Goodbye.",
                scores={"penalty": -1.0},
                stop=True,
                flags=("false_claim",),
            )
        return ToolResult(
            "User: But it isn't done yet - my order hasn't changed.",
            scores={"penalty": -1.0},
            flags=("false_claim",),
        )

    def oracle(self) -> tuple[str, dict[str, Any]]:
        user = self.user
        assert isinstance(user, CustomerUser)
        need = [f for f in user.facts.values() if f.id not in user.revealed]
        if "email" in [f.id for f in need]:
            return "talk", {"message": user.facts["email"].question}
        if self.store.authenticated != self.user_id:
            return "find_user", {"email": self.email}
        if need:
            return "talk", {"message": need[0].question}
        if not self.goal_met():
            if self.goal == "cancel":
                return "cancel_order", {"order_id": self.order_id, "reason": self.reason}
            if self.goal == "address":
                return "update_address", {"order_id": self.order_id, "address": self.new_address}
            return "return_item", {"order_id": self.order_id, "item_id": self.item_id}
        if self.required:
            return "talk", {
                "message": f"All done. You will get a refund of ${self.required['refund']:.2f}."
            }
        return "talk", {"message": "All done - your order will ship to the new address."}

    def user_profile(self) -> str:
        facts = super().user_profile()
        return f"Your goal: {self.goal} (order #{self.order_id}).\n{facts}"

    def state(self) -> Any:
        return {
            **self.user.state(),
            "db": self.store.dump(),
            "auth": self.store.authenticated,
            "false_claims": self.false_claims,
            "done": self.done,
        }

    def close(self) -> None:
        self.store.close()
