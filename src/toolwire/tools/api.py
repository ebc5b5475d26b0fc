"""The tool contract: the ``Tool`` protocol, the ``@tool`` decorator and ``ToolContext``.

A tool's ``execute`` may be sync or async and returns a ``ToolResult``. Tools built with
``@tool`` get their JSON schema and argument validation from the function's signature through
pydantic; invalid model arguments raise ``ToolRefusal``, whose message the model may read.

Calls of one turn run concurrently unless a tool is sequential-only (``concurrent=False``, the
default for a tool that needs approval): read it through :func:`runs_concurrently`. A tool
served by another process (an MCP server's) says ``remote = True``; its calls count against the
run's remote-call budget: read it through :func:`is_remote`.

Two traits say what a tool is to a person and to an MCP host, never to the model:
- ``title``: a name for people; without one, :func:`title_of` makes one of the tool's name.
- ``open_world``: whether a call reaches outside the workspace (an HTTP request, another
  process's tool); read it through :func:`reaches_outside`. A remote tool always does; a tool
  that does not say is taken to reach outside only when remote.

Three optional traits make a run pause for a person (the protocol does not require them; read
them through :func:`needs_approval`, :func:`input_model_of` and :func:`preview_of`):
- ``requires_approval`` or a write ``effect``: the run suspends before the call's turn executes;
- ``input_model`` (a pydantic model): the run suspends for a person's input, validated by it;
- ``preview(arguments, context)``: lines an approver reads (a diff, the row before and after).

Three traits serve containment by information flow (read them through
:mod:`toolwire.tools.labels`, never here): ``integrity`` (``"trusted"`` or ``"untrusted"``: may
the text of its results be believed as instructions; undeclared is untrusted),
``consequential`` (a call changes something or sends data out; undeclared: derived from the
effect and ``open_world``) and ``sink_class`` (the most sensitive data class a consequential
call may carry; undeclared: the tool's own data class). One more keeps output from the model
(:mod:`toolwire.policy.quarantine`): ``quarantine`` (``True``: every result is held by the run
as a variable the model sees only a handle of; a list of names: those top-level fields of a
JSON object result are), and ``identifiers`` (``True``: what it holds lists identifiers the
system holds, a JSON array of names the model may choose one of without reading them).
A consequential tool may name ``stores_untrusted``: the arguments whose value it only stores
where it is read back as untrusted (a file's content), which may receive a held untrusted
value unattended.

A tool that works only on the run's workspace says ``needs_workspace = True`` (the policy gate
reads it: :func:`toolwire.tools.policy.needs_workspace`): a run without a workspace is not
offered it, since every call of it could only fail.

Two more bind what a person approves to what runs (read them through :func:`basis_of` and
:func:`stale_preview_of`):
- ``preview_basis(arguments, context) -> str``: the inputs a preview is computed on, as text
  (a file's identity and content hash, a row's current values). It is taken with the preview
  and again when the approved call is about to run; if it changed, the call does not run. A
  tool without one has nothing re-checked.
- ``stale_preview`` (:class:`StalePreview`): what then happens: the run waits again on a fresh
  preview (the default), or the call fails with a text the model reads.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, cast, get_type_hints, overload, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from toolwire.core.errors import ConfigError, ToolRefusal
from toolwire.core.messages import ToolSpec
from toolwire.core.result import ToolResult
from toolwire.core.trust import DEFAULT_DATA_CLASS, DataClass, Integrity, TrustZone

DEFAULT_GROUP = "custom"


class Effect(StrEnum):
    """What a call does to the world. A write effect needs an operator's approval."""

    READ_ONLY = "read_only"
    IDEMPOTENT_WRITE = "idempotent_write"
    NON_IDEMPOTENT_WRITE = "non_idempotent_write"

    @property
    def writes(self) -> bool:
        return self is not Effect.READ_ONLY


class StalePreview(StrEnum):
    """What happens to an approved call whose preview's inputs changed before it ran."""

    WAIT_AGAIN = "wait_again"  # nothing of the turn runs; it waits for a person on a fresh preview
    FAIL = "fail"  # the call does not run; the model reads that it was not executed, and why


@dataclass(frozen=True, slots=True)
class User:
    """The person a run acts for."""

    name: str
    is_admin: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a tool may know about its call. No user means anonymous: not an admin.

    ``trust_zone`` is the run's (its charter's); None means not known, which is treated as the
    least trusted zone (see :mod:`toolwire.tools.disclosure`)."""

    user: User | None = None
    run_id: str | None = None
    workspace: Any = None
    trust_zone: TrustZone | None = None

    @property
    def is_admin(self) -> bool:
        return self.user is not None and self.user.is_admin

    def in_zone(self, zone: TrustZone) -> ToolContext:
        """This context for a run in ``zone``."""
        return self if self.trust_zone is zone else dataclasses.replace(self, trust_zone=zone)


@runtime_checkable
class Tool(Protocol):
    """Anything the loop can offer to a model and execute."""

    @property
    def spec(self) -> ToolSpec: ...
    @property
    def group(self) -> str: ...
    @property
    def enabled_by_default(self) -> bool: ...
    @property
    def requires_admin(self) -> bool: ...
    @property
    def requires_approval(self) -> bool: ...
    @property
    def data_class(self) -> str: ...

    def execute(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult | Awaitable[ToolResult]: ...


ToolFunction = Callable[..., Any]
Previewer = Callable[..., Sequence[str]]
Basis = Callable[..., str]
PreviewBasis = Callable[[Mapping[str, Any], ToolContext], str]


def needs_approval(tool: Tool) -> bool:
    """Whether a call of ``tool`` waits for an operator: marked so, or declaring a write."""
    if getattr(tool, "requires_approval", False) is True:
        return True
    effect = getattr(tool, "effect", Effect.READ_ONLY)
    try:
        return Effect(effect).writes
    except ValueError:
        return True  # an effect we cannot read is treated as the riskiest one


def runs_concurrently(tool: Tool) -> bool:
    """Whether a call of ``tool`` may overlap other calls of its turn.

    A tool says so with ``concurrent``; without it, a tool that needs an operator's approval
    (a write, or marked so) may not, and any other tool may.
    """
    concurrent = getattr(tool, "concurrent", None)
    if isinstance(concurrent, bool):
        return concurrent
    return not needs_approval(tool)


def is_remote(tool: Tool) -> bool:
    """Whether ``tool`` runs in another process (an MCP server): its calls have a budget."""
    return getattr(tool, "remote", False) is True


def reaches_outside(tool: Tool) -> bool:
    """Whether a call of ``tool`` reaches outside the workspace (see the module)."""
    return is_remote(tool) or getattr(tool, "open_world", False) is True


def title_of(tool: Tool) -> str:
    """The tool's title for people: its own, else its name made readable
    (``read_records`` is "Read records", an MCP server's ``docs__get_page`` "Docs: get page")."""
    title = getattr(tool, "title", None)
    if isinstance(title, str) and title.strip():
        return title.strip()
    parts = [p.replace("_", " ").replace("-", " ").strip() for p in tool.spec.name.split("__")]
    readable = ": ".join(p for p in parts if p) or tool.spec.name
    return readable[:1].upper() + readable[1:]


def input_model_of(tool: Tool) -> type[BaseModel] | None:
    """The pydantic model a person's input for ``tool`` must fit, if the tool asks for input."""
    model = getattr(tool, "input_model", None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def preview_of(tool: Tool) -> Callable[[Mapping[str, Any], ToolContext], Sequence[str]] | None:
    """The tool's own preview of a call, if it has one."""
    preview = getattr(tool, "preview", None)
    return preview if callable(preview) else None


def basis_of(tool: Tool) -> PreviewBasis | None:
    """The tool's own account of what its preview of a call is computed on, if it has one."""
    basis = getattr(tool, "preview_basis", None)
    return basis if callable(basis) else None


def stale_preview_of(tool: Tool) -> StalePreview:
    """What ``tool`` declares for an approved call whose preview's inputs changed; a value we
    cannot read waits again, the choice that runs nothing."""
    try:
        return StalePreview(getattr(tool, "stale_preview", StalePreview.WAIT_AGAIN))
    except ValueError:
        return StalePreview.WAIT_AGAIN


class FunctionTool:
    """A tool built from a typed function by :func:`tool`."""

    def __init__(
        self,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        group: str = DEFAULT_GROUP,
        enabled_by_default: bool = True,
        requires_admin: bool = False,
        requires_approval: bool = False,
        data_class: str = DEFAULT_DATA_CLASS,
        effect: Effect | str = Effect.READ_ONLY,
        input_model: type[BaseModel] | None = None,
        blocking: bool = True,
        concurrent: bool | None = None,
        stale_preview: StalePreview | str = StalePreview.WAIT_AGAIN,
        title: str | None = None,
        open_world: bool = False,
        needs_workspace: bool = False,
        integrity: Integrity | str | None = None,
        consequential: bool | None = None,
        sink_class: str | None = None,
        quarantine: bool | Sequence[str] = False,
        identifiers: bool = False,
        stores_untrusted: Sequence[str] = (),
    ) -> None:
        self.function = function
        self.blocking = blocking
        self.group = group
        self.enabled_by_default = enabled_by_default
        self.requires_admin = requires_admin
        self.requires_approval = requires_approval
        self.data_class = DataClass.parse(data_class).name.lower()  # a misspelling fails here
        self.effect = Effect(effect)
        # None: decided by runs_concurrently (a call needing approval runs alone).
        self.concurrent = concurrent
        self.input_model = input_model
        self.stale_preview = StalePreview(stale_preview)
        self.title = title
        self.open_world = open_world
        self.needs_workspace = needs_workspace
        # None: not declared, read as untrusted (see toolwire.tools.labels); a misspelling fails
        self.integrity = None if integrity is None else Integrity.parse(integrity)
        self.consequential = consequential  # None: derived from the effect and open_world
        self.sink_class = None if sink_class is None else DataClass.parse(sink_class).name.lower()
        self.quarantine = _quarantine(quarantine)
        if identifiers is not False and (identifiers is not True or not self.quarantine):
            raise ConfigError("identifiers takes True, for a tool whose output is quarantined")
        self.identifiers = identifiers
        self.stores_untrusted = tuple(stores_untrusted)
        self._previewer: Previewer | None = None
        self._basis: Basis | None = None
        self._context_param, self._model = _arguments_model(function)
        # What ``model_validate`` calls, without its wrapper: once per call of the tool.
        self._validate = self._model.__pydantic_validator__.validate_python
        self._exact = _exact_fields(self._model)
        self._is_async = inspect.iscoroutinefunction(function)
        schema = self._model.model_json_schema()
        schema.pop("title", None)
        self.spec = ToolSpec(
            name=name or function.__name__,
            description=description or summary(inspect.getdoc(function) or ""),
            parameters=schema,
        )
        unknown = set(self.stores_untrusted) - set(schema.get("properties", {}))
        if isinstance(stores_untrusted, str) or unknown:
            raise ConfigError("stores_untrusted takes a list of the tool's argument names")
        if input_model is not None and needs_approval(self):
            # Which would come first is not obvious to anyone; refuse the combination.
            raise ConfigError(
                f'tool "{self.spec.name}" cannot both need approval and ask for input'
            )

    @property
    def is_async(self) -> bool:
        """A coroutine function: the seam awaits it on the loop instead of a worker thread."""
        return self._is_async

    def __repr__(self) -> str:
        return f"<FunctionTool {self.spec.name!r} group={self.group!r}>"

    def execute(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult | Awaitable[ToolResult]:
        exact = self._exact
        if exact is not None:  # arguments of exactly the fields' types validate to themselves
            get = arguments.get
            for name, kind in exact:
                if type(get(name)) is not kind:
                    exact = None
                    break
            if exact is not None and len(arguments) != len(exact):
                exact = None
        if exact is not None:
            kwargs: Mapping[str, Any] = arguments
        else:
            try:
                kwargs = self._validate(arguments).__dict__  # the model's own
            except ValidationError as exc:
                raise ToolRefusal(_describe(self.spec.name, exc)) from None
        if self._context_param:
            kwargs = {**kwargs, self._context_param: context}
        if self._is_async:
            return _await_result(self.function(**kwargs))
        value = self.function(**kwargs)
        return ToolResult.text(value) if type(value) is str else as_result(value)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate model arguments; raise ``ToolRefusal`` naming every problem."""
        try:
            model = self._validate(arguments)
        except ValidationError as exc:
            raise ToolRefusal(_describe(self.spec.name, exc)) from None
        return dict(model.__dict__)

    def previewer(self, function: Previewer) -> Previewer:
        """Decorate the function that previews a call: same parameters, returns lines."""
        self._previewer = function
        return function

    @property
    def preview(self) -> Callable[[Mapping[str, Any], ToolContext], Sequence[str]] | None:
        return None if self._previewer is None else self._preview

    def _preview(self, arguments: Mapping[str, Any], context: ToolContext) -> Sequence[str]:
        assert self._previewer is not None
        return self._previewer(**self._keywords(arguments, context))

    def basis(self, function: Basis) -> Basis:
        """Decorate the function that tells what a call's preview is computed on: same
        parameters, returns text (see the module)."""
        self._basis = function
        return function

    @property
    def preview_basis(self) -> PreviewBasis | None:
        return None if self._basis is None else self._preview_basis

    def _preview_basis(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        assert self._basis is not None
        return self._basis(**self._keywords(arguments, context))

    def _keywords(self, arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        kwargs = self.validate(arguments)
        if self._context_param:
            kwargs[self._context_param] = context
        return kwargs


def _quarantine(value: bool | Sequence[str]) -> bool | tuple[str, ...]:
    """A tool's ``quarantine`` as declared: a bool, or field names (a misspelling fails)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value) or not value:
        raise ConfigError("quarantine takes True, False or a list of a result's field names")
    return tuple(value)


async def _await_result(pending: Awaitable[Any]) -> ToolResult:
    return as_result(await pending)


def summary(docstring: str) -> str:
    """A docstring's first paragraph, on one line: what the model is told about the tool.

    Later paragraphs (artifact shapes, limits, notes for developers) stay out of every request.
    """
    return " ".join(docstring.split("\n\n", 1)[0].split())


def as_result(value: Any) -> ToolResult:
    """What a tool function returned, as a ``ToolResult``: ``str`` or ``bytes`` become text."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, bytes):  # raw output; the seam coerces invalid UTF-8
        return ToolResult.text(value.decode("utf-8", "replace"))
    raise TypeError(f"a tool must return ToolResult or str, not {type(value).__name__}")


def _arguments_model(function: ToolFunction) -> tuple[str | None, type[BaseModel]]:
    hints = get_type_hints(function, include_extras=True)
    context_param: str | None = None
    fields: dict[str, Any] = {}
    for param in inspect.signature(function).parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool function {function.__name__} cannot take *args or **kwargs")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model = create_model(
        f"{function.__name__}_arguments",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return context_param, model


_PLAIN = frozenset({int, str, float, bool})


def _exact_fields(model: type[BaseModel]) -> tuple[tuple[str, type], ...] | None:
    """The fields of an arguments model whose check is a type test, when every field is one:
    required, a plain ``int``, ``str``, ``float`` or ``bool`` with no constraint. Arguments of
    exactly those types, and no others, validate to themselves, so :meth:`FunctionTool.execute`
    passes them on without the validator (about half a call's cost for a small tool); anything
    else (a missing or extra key, ``"1"`` for an int, an int for a float) goes through it."""
    fields = []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if kind not in _PLAIN or field.metadata or not field.is_required() or field.alias:
            return None
        fields.append((name, cast("type", kind)))
    return tuple(fields) or None


def _describe(name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return f'invalid arguments for tool "{name}": ' + "; ".join(problems)


@overload
def tool(function: ToolFunction, /) -> FunctionTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    group: str = DEFAULT_GROUP,
    enabled_by_default: bool = True,
    requires_admin: bool = False,
    requires_approval: bool = False,
    data_class: str = DEFAULT_DATA_CLASS,
    effect: Effect | str = Effect.READ_ONLY,
    input_model: type[BaseModel] | None = None,
    blocking: bool = True,
    concurrent: bool | None = None,
    stale_preview: StalePreview | str = StalePreview.WAIT_AGAIN,
    title: str | None = None,
    open_world: bool = False,
    needs_workspace: bool = False,
    integrity: Integrity | str | None = None,
    consequential: bool | None = None,
    sink_class: str | None = None,
    quarantine: bool | Sequence[str] = False,
    identifiers: bool = False,
    stores_untrusted: Sequence[str] = (),
) -> Callable[[ToolFunction], FunctionTool]: ...
def tool(
    function: ToolFunction | None = None, /, **options: Any
) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """Make a tool from a typed function: ``@tool`` or ``@tool(group="files", ...)``."""
    if function is not None:
        return FunctionTool(function)
    return lambda f: FunctionTool(f, **options)
