"""Strategies: how proposals are combined into one answer (``single``, ``best-of-n``,
``keep-revert``, ``evolve``). Importing this package registers them; see docs/solve.md."""

from kernellab.agents.strategies import best_of_n, evolve, keep_revert, single  # noqa: F401 - registers them
from kernellab.agents.strategies.base import (
    Strategy,
    StrategyError,
    StrategyOutcome,
    create_strategy,
    register_strategy,
    registered_strategies,
)

__all__ = ["Strategy", "StrategyError", "StrategyOutcome", "create_strategy", "register_strategy",
           "registered_strategies"]
