"""A three-page registration form with server-side validation and a review page.

Pages: ``/step/1`` (name, email), ``/step/2`` (street, city, zip, country), ``/step/3``
(contact method, newsletter, notes), ``/review`` (*Confirm*) and ``/done``. Each step posts
to the server, which validates (email shape, five-digit zip, required fields), stores what
was sent and either shows the errors on the same step or moves on. The target profile comes
from the task seed; :meth:`FormSite.field_scores` gives per-field credit against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from agentgym.simulators.browser.site import Request, Response, Site, esc, not_found, page
from agentgym.simulators.browser.sites.words import COUNTRIES, FIRST_NAMES, LAST_NAMES, WORDS

STEPS: dict[int, tuple[tuple[str, str, str], ...]] = {
    # step -> (field, label, kind)
    1: (
        ("first_name", "First name", "text"),
        ("last_name", "Last name", "text"),
        ("email", "Email", "text"),
    ),
    2: (
        ("street", "Street", "text"),
        ("city", "City", "text"),
        ("zip", "ZIP code", "text"),
        ("country", "Country", "select"),
    ),
    3: (
        ("contact", "Contact method", "radio"),
        ("newsletter", "Newsletter", "checkbox"),
        ("notes", "Notes", "text"),
    ),
}
FIELDS = tuple(f for step in STEPS.values() for f, _, _ in step)
COUNTRY_CHOICES = COUNTRIES[:12]
CONTACTS = ("email", "phone", "mail")
HEADER = "<header class='ag'><b>Registration</b></header>"


def make_profile(seed: int) -> dict[str, str]:
    rng = np.random.default_rng([seed, 5_151])
    first = FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]
    last = LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]
    return {
        "first_name": first,
        "last_name": last,
        "email": f"{first.lower()}.{last.lower()}@example.org",
        "street": f"{int(rng.integers(1, 999))} {WORDS[int(rng.integers(len(WORDS)))].title()} Street",
        "city": WORDS[int(rng.integers(len(WORDS)))].title() + "ville",
        "zip": f"{int(rng.integers(10000, 99999))}",
        "country": COUNTRY_CHOICES[int(rng.integers(len(COUNTRY_CHOICES)))],
        "contact": CONTACTS[int(rng.integers(len(CONTACTS)))],
        "newsletter": "yes" if rng.integers(2) else "no",
        "notes": f"{WORDS[int(rng.integers(len(WORDS)))]} {WORDS[int(rng.integers(len(WORDS)))]}",
    }


def describe(profile: Mapping[str, str]) -> str:
    return (
        f"Register {profile['first_name']} {profile['last_name']} (email {profile['email']}), "
        f"address {profile['street']}, {profile['city']}, ZIP {profile['zip']}, {profile['country']}; "
        f"contact by {profile['contact']}; newsletter: {profile['newsletter']}; "
        f'notes: "{profile["notes"]}". Fill in all three pages, then confirm.'
    )


def validate(name: str, value: str) -> str | None:
    if name != "notes" and name != "newsletter" and not value.strip():
        return "This field is required."
    if name == "email" and ("@" not in value or "." not in value.split("@")[-1]):
        return "Enter a valid email address."
    if name == "zip" and not (len(value) == 5 and value.isdigit()):
        return "A ZIP code has five digits."
    return None


class FormSite(Site):
    """The registration form; state = the target seed, saved values, step, confirmed."""

    start_path = "/step/1"

    def __init__(self) -> None:
        super().__init__()
        self.seed = 0
        self.profile: dict[str, str] = {}
        self.values: dict[str, str] = {}
        self.reached = 1
        self.confirmed = False

    def reset(self, seed: int, task: Mapping[str, Any]) -> None:
        self.seed = int(seed)
        self.profile = make_profile(self.seed)
        self.values, self.reached, self.confirmed = {}, 1, False

    def dump(self) -> Any:
        return {
            "seed": self.seed,
            "values": self.values,
            "reached": self.reached,
            "confirmed": self.confirmed,
        }

    def load(self, state: Any) -> None:
        self.reset(state["seed"], {})
        self.values = dict(state["values"])
        self.reached, self.confirmed = int(state["reached"]), bool(state["confirmed"])

    def field_scores(self) -> dict[str, float]:
        """1.0 per field whose saved value equals the target (case/space-insensitive)."""
        return {
            f: float(self.values.get(f, "").strip().lower() == self.profile[f].strip().lower())
            for f in FIELDS
        }

    def handle(self, request: Request) -> Response:
        path = request.path
        if path.startswith("/step/") and path[6:].isdigit() and int(path[6:]) in STEPS:
            n = int(path[6:])
            if n > self.reached:
                return Response(redirect=f"/step/{self.reached}")
            if request.method == "POST":
                errors: dict[str, str] = {}
                for name, _, kind in STEPS[n]:
                    value = request.arg(name)
                    if kind == "checkbox":
                        value = "yes" if value else "no"
                    self.values[name] = value[:500]
                    problem = validate(name, value)
                    if problem:
                        errors[name] = problem
                if errors:
                    return Response(self._step(n, errors))
                self.reached = max(self.reached, n + 1)
                return Response(redirect=f"/step/{n + 1}" if n < len(STEPS) else "/review")
            return Response(self._step(n, {}))
        if path == "/review":
            if self.reached <= len(STEPS):
                return Response(redirect=f"/step/{self.reached}")
            if request.method == "POST":
                self.confirmed = True
                return Response(redirect="/done")
            rows = "".join(
                f"<tr><td>{esc(label)}</td><td>{esc(self.values.get(name, ''))}</td></tr>"
                for step in STEPS.values()
                for name, label, _ in step
            )
            body = (
                f"<h2>Review</h2><table>{rows}</table><a href='/step/1'>Edit</a>"
                "<form method='post' action='/review'><button type='submit'>Confirm</button></form>"
            )
            return Response(page("Review", HEADER + body))
        if path == "/done":
            text = "Registration complete." if self.confirmed else "Not confirmed yet."
            return Response(page("Done", HEADER + f"<p>{text}</p>"))
        return not_found(path)

    def _step(self, n: int, errors: Mapping[str, str]) -> str:
        parts = [f"<h2>Step {n} of {len(STEPS)}</h2>", f"<form method='post' action='/step/{n}'>"]
        for name, label, kind in STEPS[n]:
            value = self.values.get(name, "")
            if kind == "text":
                ctl = f"<input name='{name}' aria-label='{esc(label)}' value='{esc(value)}'>"
            elif kind == "select":
                opts = "".join(
                    f"<option{' selected' if c == value else ''}>{esc(c)}</option>"
                    for c in ("Choose...", *COUNTRY_CHOICES)
                )
                ctl = f"<select name='{name}' aria-label='{esc(label)}'>{opts}</select>"
            elif kind == "radio":
                ctl = "".join(
                    f"<label><input type='radio' name='{name}' value='{c}' aria-label='{label}: {c}'"
                    f"{' checked' if c == value else ''}> {c}</label> "
                    for c in CONTACTS
                )
            else:
                ctl = (
                    f"<input type='checkbox' name='{name}' value='yes' aria-label='Subscribe to the newsletter'"
                    f"{' checked' if value == 'yes' else ''}>"
                )
            err = f"<span class='error'>{esc(errors[name])}</span>" if name in errors else ""
            parts.append(f"<p>{esc(label)}: {ctl} {err}</p>")
        if n > 1:
            parts.append(f"<a href='/step/{n - 1}'>Previous</a> ")
        parts.append("<button type='submit'>Next</button></form>")
        return page(f"Registration step {n}", HEADER + "".join(parts))
