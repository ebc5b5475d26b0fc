import toolwire


def test_public_api_is_pinned() -> None:
    assert toolwire.__all__ == sorted(toolwire.__all__, key=lambda n: (not n.isupper(), n))
    assert toolwire.__all__ == [
        "ARTIFACT_BYTE_CAP",
        "ARTIFACT_MAX_DEPTH",
        "CONTENT_BYTE_CAP",
        "DEFAULT_MAX_ROUNDS",
        "MAX_ROUNDS",
        "Artifact",
        "ArtifactType",
        "BaseProvider",
        "BoundedContent",
        "ChatMessage",
        "Circuits",
        "CompletionRequest",
        "CompletionResponse",
        "Effect",
        "FallbackProvider",
        "Grant",
        "LoopResult",
        "OperatorDecision",
        "PrivacyLevel",
        "Provider",
        "RunOptions",
        "RunOutcome",
        "RunRequest",
        "RunState",
        "RunStatus",
        "RunStep",
        "RunTrace",
        "Runtime",
        "ScriptedProvider",
        "StateKey",
        "TerminationReason",
        "Tool",
        "ToolCall",
        "ToolContext",
        "ToolInvocation",
        "ToolLoop",
        "ToolPolicy",
        "ToolRefusal",
        "ToolRegistry",
        "ToolResult",
        "ToolSpec",
        "ToolwireError",
        "TrustZone",
        "Usage",
        "User",
        "bound_artifacts",
        "bound_content",
        "create_provider",
        "tool",
    ]


def test_every_public_name_resolves() -> None:
    for name in toolwire.__all__:
        assert getattr(toolwire, name) is not None, name
