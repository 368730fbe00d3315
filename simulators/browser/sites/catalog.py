"""A synthetic product catalog (thousands of items from one seed) with BM25 search.

Product types, attribute pools and option values are written for this project; titles,
attribute sets, options and prices are drawn from a seeded generator, so the catalog is the
same on every machine. :class:`Catalog` indexes titles and attributes with ``bm25s`` and
returns results in a deterministic order (score, then catalog order).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np
from agentgym.simulators.browser.sites.words import COLORS

#: type -> (group, attribute pool, option dimensions, price range)
PRODUCT_TYPES: dict[
    str, tuple[str, tuple[str, ...], dict[str, tuple[str, ...]], tuple[float, float]]
] = {
    "running shoes": (
        "clothing",
        ("lightweight", "waterproof", "breathable", "non-slip", "memory foam", "wide fit"),
        {"color": COLORS[:6], "size": ("7", "8", "9", "10", "11", "12")},
        (30, 140),
    ),
    "hiking boots": (
        "clothing",
        ("waterproof", "ankle support", "non-slip", "insulated", "leather"),
        {"color": ("brown", "black", "gray"), "size": ("7", "8", "9", "10", "11", "12")},
        (50, 200),
    ),
    "t-shirt": (
        "clothing",
        ("cotton", "slim fit", "moisture wicking", "machine washable", "crew neck", "v-neck"),
        {"color": COLORS, "size": ("small", "medium", "large", "x-large")},
        (8, 40),
    ),
    "rain jacket": (
        "clothing",
        ("waterproof", "packable", "hooded", "windproof", "breathable"),
        {"color": COLORS[:5], "size": ("small", "medium", "large", "x-large")},
        (30, 160),
    ),
    "backpack": (
        "bags",
        ("waterproof", "laptop compartment", "lightweight", "anti-theft", "usb charging"),
        {"color": COLORS[:7]},
        (20, 120),
    ),
    "headphones": (
        "electronics",
        ("wireless", "noise cancelling", "over-ear", "bluetooth", "foldable", "long battery life"),
        {"color": ("black", "white", "blue", "pink")},
        (15, 300),
    ),
    "phone case": (
        "electronics",
        ("shockproof", "slim", "wallet", "clear", "magnetic"),
        {"color": COLORS[:8], "model": ("phone 12", "phone 13", "phone 14", "phone 15")},
        (6, 45),
    ),
    "desk lamp": (
        "home",
        ("led", "dimmable", "usb charging", "touch control", "eye-care"),
        {"color": ("black", "white", "gray")},
        (15, 90),
    ),
    "water bottle": (
        "home",
        ("insulated", "bpa free", "leak proof", "stainless steel", "wide mouth"),
        {"color": COLORS[:8], "size": ("500 ml", "750 ml", "1 l")},
        (8, 50),
    ),
    "yoga mat": (
        "sports",
        ("non-slip", "eco friendly", "extra thick", "with carrying strap"),
        {"color": ("purple", "blue", "green", "black", "pink")},
        (15, 80),
    ),
    "coffee beans": (
        "grocery",
        ("organic", "dark roast", "fair trade", "decaf", "whole bean", "medium roast"),
        {"size": ("12 oz", "1 lb", "2 lb")},
        (9, 45),
    ),
    "shampoo": (
        "beauty",
        ("sulfate free", "paraben free", "natural", "for dry hair", "vegan"),
        {"size": ("8 fl oz", "16 fl oz", "32 fl oz")},
        (6, 35),
    ),
    "throw pillow": (
        "home",
        ("velvet", "machine washable", "hypoallergenic", "decorative", "down alternative"),
        {"color": COLORS, "size": ("16 x 16 inch", "18 x 18 inch", "20 x 20 inch")},
        (10, 60),
    ),
    "green tea": (
        "grocery",
        ("organic", "caffeine free", "loose leaf", "matcha", "jasmine"),
        {"size": ("20 bags", "50 bags", "100 bags")},
        (5, 30),
    ),
}

BRANDS = [
    "Nordvik",
    "Alder",
    "Brightlane",
    "Corvo",
    "Dovetail",
    "Everpine",
    "Fablecraft",
    "Greystone",
    "Halcyon",
    "Ironleaf",
    "Juniper&Co",
    "Kestrel",
    "Lumen",
    "Mistral",
    "Northpeak",
    "Oakhaven",
    "Pinecrest",
    "Quillon",
    "Riverton",
    "Solace",
    "Tidewater",
    "Umbra",
    "Vantage",
    "Wrenfield",
    "Yarrowby",
    "Zenith",
]
STYLES = (
    "classic",
    "premium",
    "everyday",
    "pro",
    "essential",
    "deluxe",
    "urban",
    "outdoor",
    "compact",
    "signature",
)
AUDIENCE = ("for men", "for women", "for kids", "unisex", "", "", "")

_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass
class Product:
    asin: str
    type: str
    title: str
    attributes: list[str]
    options: dict[str, list[str]]
    price: float
    rating: float
    description: str = field(default="")

    @property
    def group(self) -> str:
        return PRODUCT_TYPES[self.type][0]


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class Catalog:
    """``size`` products generated from ``seed``, with a BM25 index over them."""

    def __init__(self, seed: int = 0, size: int = 3000):
        rng = np.random.default_rng([seed, 7_001])
        types = list(PRODUCT_TYPES)
        self.products: list[Product] = []
        for i in range(size):
            ptype = types[int(rng.integers(len(types)))]
            _, pool, dims, (lo, hi) = PRODUCT_TYPES[ptype]
            n_attr = int(rng.integers(2, min(4, len(pool)) + 1))
            attrs = [pool[int(j)] for j in sorted(rng.choice(len(pool), n_attr, replace=False))]
            options = {}
            for dim, values in dims.items():
                k = int(rng.integers(2, len(values) + 1))
                options[dim] = [
                    values[int(j)] for j in sorted(rng.choice(len(values), k, replace=False))
                ]
            brand = BRANDS[int(rng.integers(len(BRANDS)))]
            style = STYLES[int(rng.integers(len(STYLES)))]
            audience = (
                AUDIENCE[int(rng.integers(len(AUDIENCE)))]
                if PRODUCT_TYPES[ptype][0] == "clothing"
                else ""
            )
            shown = [attrs[int(j)] for j in rng.permutation(len(attrs))[: max(1, n_attr - 1)]]
            title = " ".join(
                w
                for w in [
                    brand,
                    style.title(),
                    *[a.title() for a in shown],
                    ptype.title(),
                    audience,
                ]
                if w
            )
            price = round(float(rng.uniform(lo, hi)), 2)
            rating = round(float(rng.uniform(2.5, 5.0)), 1)
            desc = f"The {brand} {style} {ptype}: " + ", ".join(attrs) + "."
            self.products.append(
                Product(f"B{10000 + i:05d}", ptype, title, attrs, options, price, rating, desc)
            )
        self.by_asin = {p.asin: p for p in self.products}
        self._retriever = None

    def _index(self):  # type: ignore[no-untyped-def]
        if self._retriever is None:
            import bm25s

            corpus = [
                tokenize(f"{p.title} {p.type} {' '.join(p.attributes)}") for p in self.products
            ]
            retriever = bm25s.BM25()
            retriever.index(corpus, show_progress=False)
            self._retriever = retriever
        return self._retriever

    def search(self, query: str, limit: int = 50) -> list[Product]:
        """Products ranked by BM25 score (ties: catalog order); no hits -> empty list."""
        tokens = tokenize(query)
        retriever = self._index()
        known = [t for t in tokens if t in retriever.vocab_dict]
        if not known:
            return []
        scores = np.asarray(retriever.get_scores(known), dtype=np.float64)
        order = np.lexsort((np.arange(len(scores)), -scores))
        return [self.products[int(i)] for i in order[:limit] if scores[int(i)] > 0]


@functools.lru_cache(maxsize=4)
def get_catalog(seed: int = 0, size: int = 3000) -> Catalog:
    """A shared catalog per (seed, size), built once per process."""
    return Catalog(seed, size)
