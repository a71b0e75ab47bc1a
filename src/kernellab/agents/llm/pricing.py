"""Dollars from tokens: list prices of a few hosted models, in USD per million tokens.

Standard (not batch, not cached) prices for prompts within each model's base context tier, as the
vendors publish them; they change, so an agent's ``price_in_per_mtok`` / ``price_out_per_mtok``
options override the table. A model not listed (a local server, a new release) has no price: its
cost is reported as unknown (``None``), never as zero. Names match exactly, after dropping a
``vendor/`` prefix (OpenRouter style), a date suffix (``-20250929``, ``-2025-04-14``) or ``-latest``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, tokens_in: int | None, tokens_out: int | None) -> float:
        return ((tokens_in or 0) * self.input_per_mtok + (tokens_out or 0) * self.output_per_mtok) / 1e6


KNOWN_PRICES: dict[str, Price] = {
    # Anthropic
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    # OpenAI
    "gpt-5": Price(1.25, 10.0),
    "gpt-5.1": Price(1.25, 10.0),
    "gpt-5-mini": Price(0.25, 2.0),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.0, 8.0),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.0),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o4-mini": Price(1.10, 4.40),
    "o3-mini": Price(1.10, 4.40),
}

_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def known_price(model: str) -> Price | None:
    name = model.strip().lower().rsplit("/", 1)[-1]
    return KNOWN_PRICES.get(name) or KNOWN_PRICES.get(_SUFFIX.sub("", name))


def resolve_price(model: str, input_per_mtok: float | None, output_per_mtok: float | None) -> Price | None:
    """The price to charge: the options' if both are given, else the table's (one option given
    overrides that side of the table's price), else None."""
    table = known_price(model)
    if input_per_mtok is None and output_per_mtok is None:
        return table
    if table is None and (input_per_mtok is None or output_per_mtok is None):
        return None
    return Price(input_per_mtok if input_per_mtok is not None else table.input_per_mtok,  # type: ignore[union-attr]
                 output_per_mtok if output_per_mtok is not None else table.output_per_mtok)  # type: ignore[union-attr]
