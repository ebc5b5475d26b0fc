"""The context window: a run's token budget, a cheap estimate of its conversation, and pruning.

Before each request the loop asks :func:`fit` whether the conversation, the tools' definitions
and room for the answer fit the model's window. When they do not, the oldest exchanges leave
the conversation (the trace keeps them); when even the fewest messages a request needs do not
fit, the run ends ``context_full`` without a call.

The budget (:func:`context_budget`): the run's ``context_window`` setting, else the provider's
own ``context_window`` attribute, else the model's window in the ``genai-prices`` table (for a
vendor's own server); else unknown, and then nothing is estimated and nothing is dropped.

Invariants:
- An exchange is an assistant turn and everything after it up to the next assistant turn: the
  results of its tool calls, and any turn the runtime wrote after them (the malformed-call
  text). It leaves whole or not at all, so every tool call a provider is sent has its result,
  and provider state (thinking and thought signatures) stays with its own turn.
- The head (the system messages and the first user turn: everything before the first assistant
  turn) and the latest exchange are never dropped.
- Each round costs O(new messages) while nothing is dropped: the :class:`Tally` carries the
  size of what was already counted, set to the provider's own ``prompt_tokens`` after each
  request. Only a round that drops exchanges looks at the older messages again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from toolwire.core.messages import ChatMessage, ToolSpec
from toolwire.core.reprs import utf8_size
from toolwire.policy.options import RunOptions
from toolwire.policy.pricing import context_window_of, model_of, pricing_family
from toolwire.providers.base import Provider, Usage

# The estimate: UTF-8 bytes over BYTES_PER_TOKEN, plus framing. English prose runs near four
# bytes a token and JSON or code near three, so three errs towards too many tokens (a request
# the API refuses is worse than an exchange dropped early); the provider's count replaces the
# estimate after each request, so the error never builds up.
BYTES_PER_TOKEN = 3
MESSAGE_OVERHEAD = 4  # role and framing of each message (the APIs document 3 to 4)
CALL_OVERHEAD = 10  # a tool call's or a tool definition's id, type and wrapping
# Room kept for the answer when the run sets no max_tokens: the Anthropic adapter's own
# default output cap (the APIs count the cap against the window), but never more than a
# quarter of a small window. A thinking budget is output too, and is reserved when larger.
DEFAULT_ANSWER_RESERVE = 4096


class Tally(NamedTuple):
    """The size of the first ``counted`` messages of a run's conversation, tools included.

    ``tokens`` is the provider's count where it gave one, else ``estimate``; ``estimate`` is
    always ours, so that the tokens of dropped messages can be scaled by ``tokens/estimate``.
    """

    counted: int
    tokens: int
    estimate: int


class Window(NamedTuple):
    """What one request may fill: the model's window less the answer's reserve."""

    size: int  # the model's context window, in tokens
    reserve: int  # kept free for the answer
    tools: int  # the estimated tokens of the tools' definitions sent with each request

    @property
    def room(self) -> int:
        return self.size - self.reserve


class Fitted(NamedTuple):
    """The conversation to send, its tally, and what was dropped to make it fit."""

    messages: tuple[ChatMessage, ...]
    tally: Tally
    dropped_exchanges: int = 0
    dropped_messages: int = 0
    tokens_before: int = 0


class Overflow(NamedTuple):
    """Even the head and the latest exchange do not fit."""

    tokens_before: int
    tokens_needed: int  # the head and the latest exchange alone


def context_budget(options: RunOptions, provider: Provider) -> int | None:
    """The run's context window in tokens: setting, then provider, then price table."""
    if options.context_window is not None:
        return options.context_window
    own = getattr(provider, "context_window", None)
    if isinstance(own, int) and not isinstance(own, bool) and own > 0:
        return own
    return context_window_of(pricing_family(provider), model_of(provider))


def window_for(options: RunOptions, provider: Provider, specs: Sequence[ToolSpec]) -> Window | None:
    """The window a request of this run must fit, or None when the budget is unknown."""
    size = context_budget(options, provider)
    if size is None:
        return None
    reserve = options.max_tokens or min(DEFAULT_ANSWER_RESERVE, size // 4)
    if options.reasoning is not None:
        reserve = max(reserve, options.reasoning.budget)
    return Window(size=size, reserve=reserve, tools=sum(spec_tokens(s) for s in specs))


def fit(
    messages: tuple[ChatMessage, ...], tally: Tally | None, window: Window
) -> Fitted | Overflow:
    """``messages`` made to fit ``window``, dropping the oldest exchanges if it must."""
    tally = _counted(messages, tally, window)
    if tally.tokens <= window.room:
        return Fitted(messages, tally, tokens_before=tally.tokens)
    starts = exchange_starts(messages)
    if not starts:
        return Overflow(tally.tokens, tally.tokens)
    tokens, estimate, kept_from, exchanges = tally.tokens, tally.estimate, starts[0], 0
    for end in starts[1:]:  # the oldest exchange first, never the latest
        if tokens <= window.room:
            break
        dropped = sum(message_tokens(m) for m in messages[kept_from:end])
        tokens -= _scaled(dropped, tally)
        estimate -= dropped
        kept_from, exchanges = end, exchanges + 1
    if tokens > window.room:
        return Overflow(tally.tokens, tokens)
    kept = messages[: starts[0]] + messages[kept_from:]
    return Fitted(
        messages=kept,
        tally=Tally(len(kept), tokens, estimate),
        dropped_exchanges=exchanges,
        dropped_messages=len(messages) - len(kept),
        tokens_before=tally.tokens,
    )


def calibrated(tally: Tally | None, usage: Usage) -> Tally | None:
    """The tally after a request: the provider's count of what it was sent, when it gave one."""
    if tally is None or usage.prompt_tokens <= 0:
        return tally
    return tally._replace(tokens=usage.prompt_tokens)


def exchange_starts(messages: Sequence[ChatMessage]) -> list[int]:
    """Where each exchange begins: at every assistant turn (what comes before the first is the
    head)."""
    return [i for i, m in enumerate(messages) if m.role == "assistant"]


def message_tokens(message: ChatMessage) -> int:
    """A cheap, generous estimate of one message's tokens: no tokenizer, no network."""
    size = utf8_size(message.content)
    for call in message.tool_calls:
        size += utf8_size(call.id) + utf8_size(call.name) + utf8_size(call.arguments)
    if message.provider_state is not None:  # it repeats the turn's text and calls, and more
        size = max(size, utf8_size(json.dumps(message.provider_state.data, default=str)))
    return MESSAGE_OVERHEAD + CALL_OVERHEAD * len(message.tool_calls) + _tokens(size)


def spec_tokens(spec: ToolSpec) -> int:
    """A tool definition's estimated tokens."""
    schema = json.dumps(spec.parameters, default=str)
    return CALL_OVERHEAD + _tokens(
        utf8_size(spec.name) + utf8_size(spec.description) + utf8_size(schema)
    )


def _counted(messages: tuple[ChatMessage, ...], tally: Tally | None, window: Window) -> Tally:
    """The tally over every message, counting only those it did not cover yet."""
    if tally is None or tally.counted > len(messages):
        tally = Tally(0, window.tools, window.tools)
    new = sum(message_tokens(m) for m in messages[tally.counted :])
    return Tally(len(messages), tally.tokens + new, tally.estimate + new)


def _scaled(estimated: int, tally: Tally) -> int:
    """Estimated tokens in the provider's measure, by the ratio seen over the whole tally."""
    if tally.estimate <= 0:
        return estimated
    return estimated * tally.tokens // tally.estimate


def _tokens(size: int) -> int:
    return -(-size // BYTES_PER_TOKEN)


def estimated_usage(
    usage: Usage, messages: Sequence[ChatMessage], response_turn: ChatMessage, tools: int
) -> Usage:
    """``usage`` as reported, or, when the provider reported none, our estimate of the turn
    (what it was sent, tools included, and what it answered), still marked not known."""
    if usage.known:
        return usage
    sent = sum(message_tokens(m) for m in messages) + tools
    return Usage(prompt_tokens=sent, completion_tokens=message_tokens(response_turn), known=False)
