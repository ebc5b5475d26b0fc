"""What a model call cost, from a maintained price table (``genai-prices``), never a hand list.

``cost_of(family, model, usage)`` prices one call in US dollars, or None when the price is not
known: a local or self-hosted model, a model the table does not list, or a provider family the
table does not cover. A run's cost is the sum of its calls'; an unknown call makes the run's
cost a lower bound, which ``Cost.complete`` says. A call whose provider reported no usage is
priced from toolwire's estimate of its tokens, and the run's cost is then an estimate, which
``Cost.estimated`` says (and every view with it: never shown as exact). The same table gives a
model's context window (``context_window_of``), under the same rules.

Cost is metadata: it is kept at every privacy level.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from toolwire.providers.base import Provider, Usage
from toolwire.providers.presets import PRESETS

log = logging.getLogger("toolwire.pricing")

# Our provider families as the price table names them, and each preset's own table (a
# preset's provider reports its table's id as its family, for the models that table lists).
PROVIDER_IDS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "bedrock": "aws",
    **{p.price_table: p.price_table for p in PRESETS.values() if p.price_table is not None},
}
_LOOKUP_CACHE = 256  # distinct (family, model) pairs remembered as priceable or not


@dataclass(frozen=True, slots=True)
class Cost:
    """A run's cost so far in US dollars; ``complete`` is False when a call had no price,
    ``estimated`` True when a call was priced from estimated tokens."""

    usd: Decimal = Decimal(0)
    complete: bool = True
    estimated: bool = False

    def add(self, call: Decimal | None, *, estimated: bool = False) -> Cost:
        """With one more call's price (None: not known); ``estimated``: priced from
        toolwire's estimate of the call's tokens."""
        if call is None:
            return self if not self.complete else Cost(self.usd, False, self.estimated)
        return Cost(self.usd + call, self.complete, self.estimated or estimated)

    @property
    def shown(self) -> float:
        return float(self.usd)


def cost_of(family: str | None, model: str | None, usage: Usage) -> Decimal | None:
    """The price of one call, or None when it is not known."""
    provider_id = PROVIDER_IDS.get(family or "")
    if provider_id is None or not model or not _priceable(provider_id, model):
        return None
    try:
        return _calc(provider_id, model, usage)
    except (LookupError, ValueError) as exc:
        log.info("no price for %s model %r: %s", family, model, exc)
        return None


@lru_cache(maxsize=_LOOKUP_CACHE)
def _priceable(provider_id: str, model: str) -> bool:
    try:
        _calc(provider_id, model, Usage())
    except (LookupError, ValueError):
        return False
    return True


def _calc(provider_id: str, model: str, usage: Usage) -> Decimal:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    counted = PriceUsage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    return Decimal(calc_price(counted, model, provider_id=provider_id).total_price)


def context_window_of(family: str | None, model: str | None) -> int | None:
    """The model's context window in tokens as the table lists it, or None when not known."""
    provider_id = PROVIDER_IDS.get(family or "")
    if provider_id is None or not model:
        return None
    return _window(provider_id, model)


@lru_cache(maxsize=_LOOKUP_CACHE)
def _window(provider_id: str, model: str) -> int | None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    try:
        found = calc_price(PriceUsage(input_tokens=0, output_tokens=0), model,
                           provider_id=provider_id)  # fmt: skip
    except (LookupError, ValueError):
        return None
    window = found.model.context_window
    return window if isinstance(window, int) and window > 0 else None


def pricing_family(provider: Provider) -> str | None:
    """The price table's family for ``provider``: None for a server the table cannot price."""
    family = getattr(provider, "pricing_family", None)
    return family if isinstance(family, str) else None


def model_of(provider: Provider) -> str | None:
    """The model ``provider`` asks for, when it names one."""
    model = getattr(provider, "model", None)
    return model if isinstance(model, str) else None
