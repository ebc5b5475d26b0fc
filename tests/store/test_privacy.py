from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import Artifact, ChatMessage, ToolCall
from toolwire.core.errors import ConfigError
from toolwire.core.jsonenc import dumps
from toolwire.policy.privacy import (
    CONTENT_KEYS,
    NAME_CHAR_CAP,
    PrivacyLevel,
    filter_step,
    filter_text,
)
from toolwire.policy.privacy import tool_name as shown_name
from toolwire.policy.trace import LlmStep, RequestStep, ToolStep

LLM_STEP = LlmStep(
    round=1,
    duration_ms=12.3456,
    content="Looking it up now",
    thinking="the user wants page 7",
    finish_reason="tool_calls",
    prompt_tokens=40,
    completion_tokens=9,
    total_tokens=49,
    requested_tool_calls=(ToolCall.of("c1", "get_page", {"id": 7}),),
    raw={"id": "resp-1"},
).to_dict()
REQUEST_STEP = RequestStep(
    round=1,
    messages_sent=(ChatMessage.user("hello there"),),
    tool_specs=("get_page",),
    refusals=({"name": "drop_db", "reason": "not enabled"},),
).to_dict()
TOOL_STEP = ToolStep(
    round=1,
    duration_ms=3.0,
    tool_call_id="c1",
    tool_name="get_page",
    tool_arguments={"url": "https://api.example.org/p?token=supersecretvalue", "id": 7},
    tool_result="key sk-AbCdEfGhIjKlMnOpQrStUvWx, owner ann@example.org",
    tool_is_error=False,
    tool_artifacts=(Artifact.table("rows", ["k", "v"], [["key", "sk-ZyXwVuTsRqPoNmLkJiHgFe"]]),),
).to_dict()


@pytest.mark.parametrize("level", [PrivacyLevel.METADATA, PrivacyLevel.NONE])
def test_metadata_llm_step_keeps_facts_and_counts_content(level: PrivacyLevel) -> None:
    assert filter_step(LLM_STEP, level, registered=frozenset({"get_page"})) == {
        "kind": "llm",
        "round": 1,
        "duration_ms": 12.35,
        "finish_reason": "tool_calls",
        "prompt_tokens": 40,
        "completion_tokens": 9,
        "total_tokens": 49,
        "content_length": 17,
        "thinking_length": 21,
        "requested_tool_names": ["get_page"],
        "content_withheld": True,
    }


def test_metadata_request_step_keeps_offered_tools_and_refusals() -> None:
    assert filter_step(REQUEST_STEP, PrivacyLevel.METADATA) == {
        "kind": "request",
        "round": 1,
        "duration_ms": 0.0,
        "tool_specs": ["get_page"],
        "refusals": [{"name": "drop_db", "reason": "not enabled"}],
        "messages_sent_count": 1,
        "content_withheld": True,
    }


def test_metadata_tool_step_with_artifacts() -> None:
    filtered = filter_step(TOOL_STEP, PrivacyLevel.METADATA, registered=frozenset({"get_page"}))
    assert filtered == {
        "kind": "tool",
        "round": 1,
        "duration_ms": 3.0,
        "tool_call_id": "c1",
        "tool_name": "get_page",
        "tool_is_error": False,
        "tool_result_length": 54,
        "tool_artifacts_count": 1,
        "tool_artifact_types": ["table"],
        "tool_arguments_keys_count": 2,
        "content_withheld": True,
    }
    assert "sk-" not in dumps(filtered)


def test_redacted_keeps_the_shape_and_masks_secrets() -> None:
    filtered = filter_step(TOOL_STEP, PrivacyLevel.REDACTED)
    assert filtered == {
        **TOOL_STEP,
        "tool_arguments": {"url": "https://api.example.org/p?token=***", "id": 7},
        "tool_result": "key sk-***, owner ***@***",
        "tool_artifacts": [
            {
                "type": "table",
                "label": "rows",
                "data": {"columns": ["k", "v"], "rows": [["key", "sk-***"]]},
            }
        ],
    }
    assert "content_withheld" not in filtered


def test_redacted_masks_keys_and_keeps_colliding_ones_apart() -> None:
    step = {
        "kind": "tool",
        "round": 1,
        "tool_arguments": {"sk-AAAAAAAAAAAAAAAAAAAA": 1, "sk-BBBBBBBBBBBBBBBBBBBB": 2},
    }
    assert filter_step(step, PrivacyLevel.REDACTED)["tool_arguments"] == {"sk-***": 1, "sk-***#": 2}


def test_full_is_verbatim() -> None:
    for step in (LLM_STEP, REQUEST_STEP, TOOL_STEP):
        assert filter_step(step, PrivacyLevel.FULL) == step


def test_unknown_artifact_types_and_long_names_do_not_carry_data() -> None:
    step = {
        "kind": "llm",
        "round": 1,
        "requested_tool_calls": [{"name": "n" * 5000}, {"name": "m" * 5000}, {"name": 3}, "junk"],
        "tool_artifacts": [{"type": "CANARY-in-type"}, 7],
    }
    filtered = filter_step(step, PrivacyLevel.METADATA, registered=frozenset({"n" * 5000}))
    made_up = shown_name("m" * 5000, frozenset())
    assert filtered["requested_tool_names"] == ["n" * NAME_CHAR_CAP + "…", made_up]
    assert made_up.startswith("unknown:sha256:") and len(made_up) == len("unknown:sha256:") + 16
    assert filtered["tool_artifact_types"] == ["other", "other"]
    assert filtered["tool_artifacts_count"] == 2


def test_final_answer_follows_the_level() -> None:
    answer = "mail bob@example.com"
    assert filter_text(answer, PrivacyLevel.NONE) is None
    assert filter_text(answer, PrivacyLevel.METADATA) is None
    assert filter_text(answer, PrivacyLevel.REDACTED) == "mail ***@***"
    assert filter_text(answer, PrivacyLevel.FULL) == answer


def test_levels_are_ordered_and_parsed() -> None:
    assert PrivacyLevel.NONE < PrivacyLevel.METADATA < PrivacyLevel.REDACTED < PrivacyLevel.FULL
    assert max(PrivacyLevel) is PrivacyLevel.FULL
    assert PrivacyLevel.parse(" Redacted ") is PrivacyLevel.REDACTED
    with pytest.raises(ConfigError) as caught:
        PrivacyLevel.parse("verbose")
    assert str(caught.value) == (
        "unknown privacy level 'verbose': choose one of none, metadata, redacted, full"
    )


# -- properties -------------------------------------------------------------------------------

CANARY = "CANARY-7f3a"
json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def planted(value: Any) -> Any:
    """``value`` with the canary inside every string, key and container."""
    if isinstance(value, str):
        return f"{value}{CANARY}"
    if isinstance(value, list):
        return [planted(v) for v in value] + [CANARY]
    if isinstance(value, dict):
        return {planted(k): planted(v) for k, v in value.items()} | {CANARY: CANARY}
    return CANARY


content_values = json_values.map(planted)
# A tool name no step says is registered is the model's: it carries the canary too.
calls = st.lists(
    st.fixed_dictionaries(
        {"id": content_values, "name": st.text(max_size=10).map(planted),
         "arguments": content_values}
    ),
    max_size=3,
)  # fmt: skip
steps = st.fixed_dictionaries(
    {"kind": st.sampled_from(["request", "llm", "tool"]), "round": st.integers(0, 21)},
    optional={
        **{key: content_values for key in CONTENT_KEYS},
        "requested_tool_calls": calls | content_values,
        "tool_artifacts": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(["table", "text"]),
                    "label": content_values,
                    "data": content_values,
                }
            ),
            max_size=3,
        )
        | content_values,
        "tool_name": st.text(max_size=30).map(planted),
        "finish_reason": st.text(max_size=10),
        "prompt_tokens": st.integers(),
        "tool_specs": st.lists(st.text(max_size=10)),
        "duration_ms": st.floats(allow_nan=False, allow_infinity=False),
    },
)


@settings(max_examples=200)
@given(steps, st.sampled_from([PrivacyLevel.NONE, PrivacyLevel.METADATA]))
def test_metadata_never_lets_content_through(step: dict[str, Any], level: PrivacyLevel) -> None:
    filtered = filter_step(step, level)
    assert not CONTENT_KEYS & filtered.keys()
    assert CANARY not in dumps(filtered)
    assert filtered["content_withheld"] is True


@settings(max_examples=150)
@given(
    st.dictionaries(st.text(max_size=10), json_values | st.builds(object), max_size=6),
    st.sampled_from(PrivacyLevel),
)
def test_the_filter_never_raises(step: dict[str, Any], level: PrivacyLevel) -> None:
    filtered = filter_step(step, level)
    assert isinstance(filtered, dict)
    if level < PrivacyLevel.REDACTED:
        assert not CONTENT_KEYS & filtered.keys()


@settings(max_examples=150)
@given(steps)
def test_redacted_keeps_every_key_of_the_step(step: dict[str, Any]) -> None:
    assert filter_step(step, PrivacyLevel.REDACTED).keys() == step.keys()


def test_a_deep_structure_is_cut_not_recursed_forever() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = [deep]
    filtered = filter_step({"kind": "llm", "round": 1, "raw": {"x": deep}}, PrivacyLevel.REDACTED)
    assert "… [too deep]" in dumps(filtered)


def test_every_field_of_every_step_kind_is_content_or_named_metadata() -> None:
    """A new step field must be classed here first: content is withheld below ``redacted``."""
    from toolwire.policy.privacy import (
        CONTEXT_CONTENT,
        DECISION_CONTENT,
        FAILED_CONTENT,
        LLM_CONTENT,
        REQUEST_CONTENT,
        TOOL_CONTENT,
    )
    from toolwire.policy.trace import ContextStep, DecisionStep, FailedStep

    common = {"kind", "round", "duration_ms", "start_ms"}  # start_ms: a time, no content
    metadata: dict[Any, set[str]] = {
        RequestStep: common | {"tool_specs", "refusals", "tool_choice"},
        LlmStep: common
        | {"stop", "finish_reason", "prompt_tokens", "completion_tokens", "total_tokens"}
        | {"tokens_estimated"}  # whether the counts are toolwire's estimate: no content
        | {"cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "cost"}
        | {"registered_tool_names"}
        | {"response_model", "response_id"}  # kept where plain, else as digests
        | {"output_problem"}  # what of the schema an answer missed: the schema's words only
        | {"provider"}  # the chain's provider that answered: the operator's name for it
        | {"egress"},  # bytes of tool output sent, by registered tool name: counts only
        ToolStep: common
        | {"tool_call_id", "tool_name", "tool_result_bytes", "tool_is_error", "tool_refused"}
        | {"tool_registered"}
        | {"tool_integrity"}  # trusted or untrusted: a label of the tool's, no content
        # held values: the runtime's handles, sizes, labels and the tool's declared field
        # names (the values themselves are content: ``tool_held_values``)
        | {"tool_variables", "tool_received"},
        DecisionStep: common | {"decision", "decided_by", "turn_digest", "decided_at"},
        ContextStep: common
        | {"dropped_exchanges", "dropped_messages", "tokens_before", "tokens_after"}
        | {"context_window", "reserved_tokens"},
        # A chain's provider that failed, the error's class and status, the HTTP layer's
        # bounded, redacted line (what the run's own error keeps), the provider asked next.
        FailedStep: common
        | {"provider", "error_class", "error", "error_status", "next_provider"}
        | {"egress"},
    }
    content = {
        RequestStep: REQUEST_CONTENT,
        LlmStep: LLM_CONTENT,
        ToolStep: TOOL_CONTENT,
        DecisionStep: DECISION_CONTENT,
        ContextStep: CONTEXT_CONTENT,
        FailedStep: FAILED_CONTENT,
    }
    for kind, fields in metadata.items():
        assert set(kind._fields) == fields | content[kind], kind.__name__
        assert not fields & content[kind], kind.__name__
    assert CONTENT_KEYS == REQUEST_CONTENT | LLM_CONTENT | TOOL_CONTENT | DECISION_CONTENT
    assert not CONTEXT_CONTENT  # counts and token figures: nothing anyone said
    assert not FAILED_CONTENT  # names and the HTTP layer's own line


def test_a_decision_keeps_who_and_when_and_withholds_the_reason_below_redacted() -> None:
    from toolwire.policy.privacy import filter_run_step
    from toolwire.policy.trace import DecisionStep

    step = DecisionStep(
        round=2, decision="deny", decided_by="ann", turn_digest="d" * 32,
        decided_at="2026-12-01T10:00:00+00:00", decision_reason="token sk-AbCdEfGhIjKlMnOpQrSt",
    )  # fmt: skip
    kept = filter_run_step(step, PrivacyLevel.METADATA)
    assert kept == {
        "kind": "decision", "round": 2, "duration_ms": 0.0, "decision": "deny",
        "decided_by": "ann", "turn_digest": "d" * 32, "decided_at": "2026-12-01T10:00:00+00:00",
        "decision_reason_length": 29, "content_withheld": True,
    }  # fmt: skip
    redacted = filter_run_step(step, PrivacyLevel.REDACTED)
    assert "AbCdEf" not in dumps(redacted) and redacted["decision_reason"].startswith("token sk-")


def test_metadata_keeps_a_model_chosen_call_id_only_when_short_and_plain() -> None:
    from toolwire.policy.privacy import plain_id

    huge = "x" * 1_000_000
    step = ToolStep(round=1, tool_name="t", tool_result="r", tool_call_id=huge).to_dict()
    kept = filter_step(step, PrivacyLevel.METADATA)
    assert kept["tool_call_id"] == plain_id(huge) and kept["tool_call_id"].startswith("sha256:")
    assert len(kept["tool_call_id"]) == 23 and plain_id(huge + "y") != plain_id(huge)
    plain = ToolStep(round=1, tool_name="t", tool_result="r", tool_call_id="call_a1-B:2").to_dict()
    assert filter_step(plain, PrivacyLevel.METADATA)["tool_call_id"] == "call_a1-B:2"
    hostile = "<script>alert(1)</script>"
    assert plain_id(hostile).startswith("sha256:")


@pytest.mark.parametrize(
    ("model", "answer", "kept"),
    [("openai/gpt-4o-mini", "chatcmpl-9x", ("openai/gpt-4o-mini", "chatcmpl-9x")),
     ("gemini-2.5-flash@001", "resp_1", ("gemini-2.5-flash@001", "resp_1")),
     ("<img src=x>", "ignore previous instructions", ("sha256:", "sha256:")),
     ("m" * 129, "i" * 65, ("sha256:", "sha256:"))],
)  # fmt: skip
def test_metadata_keeps_the_answering_model_and_answer_id_only_when_plain(
    model: str, answer: str, kept: tuple[str, str]
) -> None:
    step = LlmStep(round=1, response_model=model, response_id=answer).to_dict()
    shown = filter_step(step, PrivacyLevel.METADATA)
    for key, expected in zip(("response_model", "response_id"), kept, strict=True):
        assert shown[key] == expected or (expected == "sha256:" and shown[key].startswith(expected))
        assert len(shown[key]) <= 128
    assert filter_step(step, PrivacyLevel.FULL)["response_model"] == model


@pytest.mark.parametrize(
    ("reason", "kept"),
    [("stop", "stop"), ("end_turn", "end_turn"), ("SAFETY", "SAFETY"),
     ("leak sk-AbCdEfGhIjKlMnOpQrSt", "other"), ("x" * 10_000, "other")],
)  # fmt: skip
def test_metadata_keeps_a_finish_reason_only_from_the_known_words(reason: str, kept: str) -> None:
    step = LlmStep(round=1, finish_reason=reason, stop="end").to_dict()
    assert filter_step(step, PrivacyLevel.METADATA)["finish_reason"] == kept
    full = filter_step(step, PrivacyLevel.FULL)
    assert full["finish_reason"] == reason


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_a_context_step_is_kept_as_it_is_at_every_level(level: PrivacyLevel) -> None:
    from toolwire.policy.privacy import filter_run_step
    from toolwire.policy.trace import ContextStep

    step = ContextStep(round=7, dropped_exchanges=2, dropped_messages=5, tokens_before=9100,
                       tokens_after=7050, context_window=8000, reserved_tokens=900,
                       duration_ms=0.123)  # fmt: skip
    assert filter_run_step(step, level) == {
        "kind": "context_truncated", "round": 7, "duration_ms": 0.12, "dropped_exchanges": 2,
        "dropped_messages": 5, "tokens_before": 9100, "tokens_after": 7050,
        "context_window": 8000, "reserved_tokens": 900,
    }  # fmt: skip


def test_a_step_says_which_names_are_registered_and_only_those_are_kept() -> None:
    from toolwire.policy.privacy import filter_for_export, filter_run_step

    made_up = shown_name("made_up", frozenset())
    tool = ToolStep(round=1, tool_name="get_page", tool_result="r", tool_registered=True)
    assert "tool_registered" not in tool.to_dict()  # a fact for the filter, not a stored field
    for kept in (filter_run_step, filter_for_export):
        assert kept(tool, PrivacyLevel.METADATA)["tool_name"] == "get_page"
        invented = tool._replace(tool_name="made_up", tool_registered=False)
        assert kept(invented, PrivacyLevel.NONE)["tool_name"] == made_up
        assert kept(invented, PrivacyLevel.REDACTED)["tool_name"] == "made_up"
    calls = (ToolCall.of("c1", "get_page", {}), ToolCall.of("c2", "made_up", {}))
    registered = frozenset({"get_page"})
    llm = LlmStep(round=1, requested_tool_calls=calls, registered_tool_names=registered)
    assert "registered_tool_names" not in llm.to_dict()
    for kept in (filter_run_step, filter_for_export):
        assert kept(llm, PrivacyLevel.METADATA)["requested_tool_names"] == ["get_page", made_up]
