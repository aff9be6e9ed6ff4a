"""Tool declaration: the Tool object, @tool_input, @tool_fn, raw tools, selectors."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    ParamSpec,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

import attrs
import pydantic_core
from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model
from pydantic.fields import FieldInfo

from toolwire._errors import ToolDefinitionError, UsageError
from toolwire._exports import publish
from toolwire._media import is_rich, mentions_parts, render, structured_value_type, to_parts
from toolwire._metadata import (
    ToolMetadata,
)
from toolwire._schema.docstrings import attribute_docstrings, parse_docstring
from toolwire._schema.neutral import check_raw_schema, clean_schema, model_schema
from toolwire._strictjson import (
    _finite_guard,
    _may_take_non_finite,
)

if TYPE_CHECKING:
    from toolwire._schema.raw import RawCheck

__all__ = [
    "Selector",
    "SelectorLike",
    "FunctionTool",
    "Injected",
    "Tool",
    "ToolDef",
    "raw_tool",
    "tool_fn",
    "tool_input",
    "tool_of",
]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
P = ParamSpec("P")
R = TypeVar("R")
_ModelT = TypeVar("_ModelT", bound=type[BaseModel])

_NAME_RE = re.compile(r"^[a-zA-Z0-9_.:-]{1,128}$")


@attrs.frozen
class ToolDef:
    """The provider-neutral definition of a tool, as sent to a model."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    metadata: ToolMetadata = ToolMetadata()  # noqa: RUF009 (frozen: one shared default is safe)

    def to_spec(self) -> dict[str, Any]:
        """The neutral spec: name, description, parameters (no effect or version)."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.input_schema,
        }


class Injected:
    """Marks a parameter of a @tool_fn function as supplied by the caller, not the model.

    ``def f(query: str, client: Annotated[Client, Injected]) -> str``
    """


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Input"


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ToolDefinitionError(
            f"tool name must be 1-128 characters of letters, digits, '_', '-', '.', ':', "
            f"got {name!r}"
        )
    return name


_MISSING: Any = object()


class Tool(Generic[InT, OutT]):
    """A tool: name, description, input validator, optional implementation and metadata.

    Build one with :func:`tool_fn`, :func:`tool_input` or :func:`raw_tool`. The
    validator is built once; ``validate_json`` runs it straight on the model's
    argument text.
    """

    __slots__ = (
        "_adapter",
        "_aliases",
        "_definition",
        "_input_schema",
        "_model_input",
        "_mounted",
        "_origin",
        "_output_adapter",
        "_output_schema",
        "_raw",
        "_schema_descriptions",
        "_validate",
        "cache",
        "description",
        "fn",
        "injected",
        "input_type",
        "is_async",
        "metadata",
        "name",
        "output_type",
    )

    name: str
    description: str
    input_type: Any
    output_type: Any
    metadata: ToolMetadata
    fn: Callable[..., Any] | None
    injected: tuple[str, ...]
    is_async: bool
    cache: dict[Any, Any]

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_type: Any,
        output_type: Any = None,
        metadata: ToolMetadata | None = None,
        fn: Callable[..., Any] | None = None,
        injected: tuple[str, ...] = (),
        input_schema: Mapping[str, Any] | None = None,
        schema_descriptions: Mapping[str, str] | None = None,
    ) -> None:
        self.name = _check_name(name)
        if not isinstance(description, str):
            raise ToolDefinitionError(
                f"tool `{name}`: description must be a string, got {type(description).__name__}"
            )
        self.description = description
        self.input_type = input_type
        self.output_type = output_type
        if metadata is not None and not isinstance(metadata, ToolMetadata):
            raise ToolDefinitionError(
                f"tool `{name}`: metadata must be a ToolMetadata, got {type(metadata).__name__}"
            )
        self.metadata = metadata or ToolMetadata()
        self.fn = fn
        self.injected = injected
        self.is_async = fn is not None and inspect.iscoroutinefunction(fn)
        self._origin: Tool[Any, Any] = self
        self._aliases: tuple[str, ...] = ()
        self._mounted: tuple[str, ...] = ()
        self._input_schema = dict(input_schema) if input_schema is not None else None
        self._schema_descriptions = schema_descriptions
        self._output_schema: Any = _MISSING
        self._definition: ToolDef | None = None
        self._raw: RawCheck | None = None
        self.cache = {}
        is_model = isinstance(input_type, type) and issubclass(input_type, BaseModel)
        # The model type whose instances call() spreads straight into the function.
        self._model_input: type | None = input_type if is_model else None
        if is_model or input_type is dict:
            self._adapter = None
        else:
            self._adapter = TypeAdapter(input_type)
        # The one validator of this tool, bound once: decoding calls it straight on the text.
        self._validate: Callable[[str | bytes], Any]
        if self._adapter is not None:
            self._validate = self._adapter.validate_json
        elif input_type is dict:
            self._validate = self._validate_raw
        elif getattr(input_type, "__pydantic_complete__", False):
            self._validate = input_type.__pydantic_validator__.validate_json
        else:  # forward references not resolved yet: let pydantic rebuild on first use
            self._validate = input_type.model_validate_json
        if input_type is not dict and _may_take_non_finite(input_type, checked=False):
            # Somewhere in the input a number is validated under a config toolwire did not
            # set (an application's model, a type adapter, an Any): the guard catches NaN
            # and 1e400 there. Inputs that cannot hold such a number skip the text scan.
            self._validate = _finite_guard(name, self._validate)
        self._output_adapter: TypeAdapter[Any] | None = None
        # Structured[X]: the output schema is X's (the value's), the model reads the text.
        value_type = structured_value_type(output_type)
        if value_type is not None and value_type is not str and not mentions_parts(value_type):
            try:
                self._output_adapter = TypeAdapter(value_type)
            except Exception as exc:
                raise ToolDefinitionError(
                    f"tool `{name}`: output type {output_type!r} is not something pydantic "
                    f"can serialise: {exc}"
                ) from None

    # -- identity -----------------------------------------------------------------

    @property
    def origin(self) -> Tool[InT, OutT]:
        """The tool this one was mounted from (itself when not renamed)."""
        return self._origin

    @property
    def names(self) -> tuple[str, ...]:
        """Every name this tool is known by: its wire name, the full name it was mounted
        under (prefixes included, before any shortening) and the name it was defined with.
        Rules that match tools by name (a policy's deny globs) match any of them."""
        return tuple(dict.fromkeys((self.name, *self._aliases, self._origin.name)))

    @property
    def mounted_names(self) -> tuple[str, ...]:
        """The names this tool is called by where it is mounted: its wire name and, when
        that was shortened, the full mounted name; never the name a tool gave itself (an
        MCP server's tool named ``read_file``, mounted as ``evil_read_file``, is not
        ``read_file`` here). Allow-lists match these; deny-lists match :attr:`names`."""
        return (self.name, *self._mounted)

    def renamed(self, name: str, *, also: Iterable[str] = ()) -> Tool[InT, OutT]:
        """A view of this tool under another wire name, sharing validator and implementation.

        ``also``: other names the view is known by (the unshortened mounted name)."""
        view: Tool[InT, OutT] = object.__new__(type(self))
        for slot in Tool.__slots__:
            if hasattr(self, slot):
                object.__setattr__(view, slot, getattr(self, slot))
        view.name = name
        view._aliases = tuple(n for n in dict.fromkeys((*self.names, *also)) if n != name)
        view._mounted = tuple(n for n in dict.fromkeys(also) if n != name)
        view._definition = None
        view.cache = {}
        view._origin = self._origin
        return view

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} effect={self.metadata.effect.value}>"

    # -- schema ---------------------------------------------------------------------

    @property
    def input_schema(self) -> Mapping[str, Any]:
        if self._input_schema is None:
            it = self.input_type
            if isinstance(it, type) and issubclass(it, BaseModel):
                self._input_schema = model_schema(it, descriptions=self._schema_descriptions)
            else:
                assert self._adapter is not None
                self._input_schema = clean_schema(self._adapter.json_schema())
        return self._input_schema

    @property
    def output_schema(self) -> Mapping[str, Any] | None:
        if self._output_schema is _MISSING:
            if self._output_adapter is None:
                self._output_schema = {"type": "string"} if self.output_type is str else None
            else:
                self._output_schema = clean_schema(self._output_adapter.json_schema())
        return cast("Mapping[str, Any] | None", self._output_schema)

    @property
    def definition(self) -> ToolDef:
        if self._definition is None:
            self._definition = ToolDef(
                self.name, self.description, self.input_schema, self.output_schema, self.metadata
            )
        return self._definition

    # -- validation -----------------------------------------------------------------

    def validate_json(self, text: str | bytes) -> InT:
        """Validate the model's argument text; raises pydantic's ValidationError."""
        return cast("InT", self._validate(text))

    def validate_python(self, value: Any, *, revalidate: bool = False) -> InT:
        """Validate a Python value; an instance of the input model passes as is unless
        ``revalidate`` (then its fields are validated again)."""
        it = self.input_type
        if self._adapter is not None:
            return cast("InT", self._adapter.validate_python(value))
        if it is dict:
            return cast("InT", self._validate_raw_value(value))
        if isinstance(value, it):
            if not revalidate:
                return cast("InT", value)
            value = value.model_dump(mode="python", round_trip=True, warnings=False)
        return cast("InT", it.model_validate(value))

    def _validate_raw(self, text: str | bytes) -> dict[str, Any]:
        return self._raw_check().text(text)

    def _validate_raw_value(self, value: Any) -> dict[str, Any]:
        return self._raw_check().value(value)

    def _raw_check(self) -> RawCheck:
        if self._raw is None:
            from toolwire._schema.raw import RawCheck  # on a raw tool's first call only

            self._raw = RawCheck(self.name, self.input_schema)
        return self._raw

    def dump_input(self, value: InT) -> str:
        """Compact JSON text of an input (used when a hook edits it)."""
        if isinstance(value, BaseModel):
            return value.model_dump_json()
        if self._adapter is not None:
            return self._adapter.dump_json(value).decode()
        return pydantic_core.to_json(value).decode()

    def dump_output(self, output: Any) -> str:
        """The tool-result content for an output: text stays text, anything else compact JSON
        (media is its placeholder text: :meth:`ToolCall.complete` keeps the parts)."""
        if isinstance(output, str):
            return output
        if self._output_adapter is not None:
            try:
                return self._output_adapter.dump_json(output, warnings="error").decode()
            except pydantic_core.PydanticSerializationError:
                pass  # not of the declared output type: serialised as what it is, below
        if is_rich(output):
            return render(to_parts(output, lambda v: pydantic_core.to_json(v).decode()))
        # No fallback to str(): an object pydantic cannot serialise is an error, not its repr.
        return pydantic_core.to_json(output).decode()

    # -- calling --------------------------------------------------------------------

    def kwargs(self, value: InT) -> dict[str, Any]:
        """The keyword arguments the implementation takes for an input."""
        if isinstance(value, BaseModel):
            return dict(value.__dict__)
        if isinstance(value, dict):
            return dict(value)
        return {"input": value}

    def call(self, value: InT, /, **injected: Any) -> Any:
        """Run the implementation with a validated input (and injected values).

        Returns the output, or an awaitable for an async tool. A tool without
        an implementation (declared with @tool_input) raises TypeError.
        """
        fn = self.fn
        if fn is None:
            raise UsageError(
                f"tool `{self.name}` has no implementation: it was declared with @tool_input; "
                f"run it in your own code and answer with call.complete(output)"
            )
        if not injected and (type(value) is self._model_input or isinstance(value, BaseModel)):
            return fn(**value.__dict__)
        return fn(**self.kwargs(value), **injected)

    def invocation(
        self, value: InT, /, **injected: Any
    ) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The implementation and the keyword arguments :meth:`call` would call it with:
        what an executor backend sends to run the body elsewhere."""
        fn = self.fn
        if fn is None:
            raise UsageError(
                f"tool `{self.name}` has no implementation: it was declared with @tool_input; "
                f"run it in your own code and answer with call.complete(output)"
            )
        return fn, {**self.kwargs(value), **injected}

    async def acall(self, value: InT, /, **injected: Any) -> OutT:
        """Run the implementation and await it if it is async."""
        out = self.call(value, **injected)
        if inspect.isawaitable(out):
            out = await out
        return cast("OutT", out)


class FunctionTool(Tool[BaseModel, Any], Generic[P, R]):
    """A tool built by :func:`tool_fn`; calling it calls the original function."""

    __slots__ = ()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        assert self.fn is not None
        return cast("R", self.fn(*args, **kwargs))


class _FlatFunctionTool(FunctionTool[P, R]):
    """``tool_fn(..., flat=True)``: the input is the function's one model parameter, whose
    fields are the tool's parameters; the function is called with the validated model."""

    __slots__ = ("_flat",)
    _flat: str

    def call(self, value: Any, /, **injected: Any) -> Any:
        fn = self.fn
        assert fn is not None
        return fn(**{self._flat: value}, **injected)

    def invocation(
        self, value: Any, /, **injected: Any
    ) -> tuple[Callable[..., Any], dict[str, Any]]:
        fn = self.fn
        assert fn is not None
        return fn, {self._flat: value, **injected}


def _flat_tool(
    fn: Callable[..., Any],
    tool_name: str,
    description: str | None,
    doc: Any,
    fields: Mapping[str, Any],
    injected_names: list[str],
    hints: Mapping[str, Any],
    metadata: ToolMetadata | None,
    options: Mapping[str, Any],
) -> FunctionTool[Any, Any]:
    names = list(fields)
    model = fields[names[0]][0] if len(names) == 1 else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ToolDefinitionError(
            f"tool `{tool_name}`: flat=True needs exactly one parameter (besides injected "
            f"ones) annotated with a pydantic model; {fn.__qualname__} has "
            f"{', '.join(f'`{n}`' for n in names) or 'none'}"
        )
    ret = hints.get("return", None)
    if inspect.iscoroutinefunction(fn) and get_origin(ret) is Awaitable:
        ret = get_args(ret)[0]
    tool: _FlatFunctionTool[Any, Any] = _FlatFunctionTool(
        name=tool_name,
        description=description if description is not None else doc.description,
        input_type=model,
        output_type=None if ret is type(None) else ret,
        metadata=_metadata_from(metadata, _split_meta(dict(options))),
        fn=fn,
        injected=tuple(injected_names),
        schema_descriptions=attribute_docstrings(model),
    )
    tool._flat = names[0]
    return tool


def _metadata_from(metadata: ToolMetadata | None, options: Mapping[str, Any]) -> ToolMetadata:
    if metadata is not None and options:
        raise ToolDefinitionError(
            "give either metadata=ToolMetadata(...) or metadata keywords "
            f"({', '.join(sorted(options))}), not both"
        )
    if metadata is not None:
        return metadata
    if not options:
        return _DEFAULT_METADATA  # frozen, so one serves every tool without options
    try:
        return ToolMetadata(**options)
    except TypeError as exc:
        raise ToolDefinitionError(f"unknown tool metadata option: {exc}") from None


_META_KEYS = frozenset(f.name for f in attrs.fields(ToolMetadata))
_DEFAULT_METADATA = ToolMetadata()


def _split_meta(kw: dict[str, Any]) -> dict[str, Any]:
    unknown = set(kw) - _META_KEYS
    if unknown:
        raise ToolDefinitionError(
            f"unknown tool option(s) {', '.join(sorted(unknown))}; metadata options are "
            f"{', '.join(sorted(_META_KEYS))}"
        )
    return {k: v for k, v in kw.items() if v is not None or k in ("timeout",)}


def _is_injected(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return any(a is Injected or isinstance(a, Injected) for a in get_args(annotation)[1:])
    return False


def _build_function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    injected: Iterable[str],
    metadata: ToolMetadata | None,
    options: Mapping[str, Any],
    flat: bool = False,
) -> FunctionTool[Any, Any]:
    if not callable(fn):
        raise ToolDefinitionError(f"@tool_fn needs a function, got {type(fn).__name__}")
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise ToolDefinitionError("@tool_fn on a lambda needs name=...")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"tool `{tool_name}`: cannot read the signature: {exc}") from None
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool `{tool_name}`: cannot resolve the type hints of {fn.__qualname__}: {exc}"
        ) from None
    raw_doc = getattr(fn, "__doc__", None)  # getdoc() cleans it, as parse_docstring does
    doc = parse_docstring(raw_doc if isinstance(raw_doc, str) else inspect.getdoc(fn))
    skip = set(injected)
    unknown_skip = skip - set(sig.parameters)
    if unknown_skip:
        raise ToolDefinitionError(
            f"tool `{tool_name}`: injected parameter(s) {sorted(unknown_skip)} are not "
            f"parameters of {fn.__qualname__}{sig}"
        )
    fields: dict[str, Any] = {}
    descriptions: dict[str, str] = {}
    injected_names: list[str] = []
    for pname, param in sig.parameters.items():
        annotation = hints.get(pname, Any)
        if pname in skip or _is_injected(annotation):
            injected_names.append(pname)
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool `{tool_name}`: *args/**kwargs ({pname}) cannot be described to a model; "
                f"give every parameter a name and a type"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"tool `{tool_name}`: positional-only parameter `{pname}` is not supported; "
                f"remove the '/' from the signature"
            )
        text = doc.params.get(pname) or None
        if isinstance(param.default, FieldInfo):
            # ``x: int = Field(gt=0)``: keep the user's constraints, add the docstring text.
            info = param.default
            if info.description is None and text:
                info = FieldInfo.merge_field_infos(info, description=text)
            fields[pname] = (annotation, info)
            continue
        # The docstring's text goes into the schema (schema_descriptions), not into a
        # pydantic Field per parameter: building the input model is the cold start's cost.
        fields[pname] = (annotation, ... if param.default is param.empty else param.default)
        if text:
            descriptions[pname] = text
    if flat:
        return _flat_tool(fn, tool_name, description, doc, fields, injected_names, hints,
                          metadata, options)  # fmt: skip
    model_name = _camel(tool_name)
    try:
        model = create_model(
            model_name,
            # Frozen: a hook must edit an input with RunNormally(new), never in place.
            # No NaN or infinity (nor 1e400): no provider can be sent them again.
            __config__=ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False),
            __module__=getattr(fn, "__module__", __name__),
            **fields,
        )
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool `{tool_name}`: pydantic cannot build an input model: {exc}"
        ) from None
    ret = hints.get("return", None)
    if inspect.iscoroutinefunction(fn) and get_origin(ret) is Awaitable:
        ret = get_args(ret)[0]
    output_type = None if ret is type(None) else ret
    meta = _metadata_from(metadata, _split_meta(dict(options)))
    tool: FunctionTool[Any, Any] = FunctionTool(
        name=tool_name,
        description=description if description is not None else doc.description,
        input_type=model,
        output_type=output_type,
        metadata=meta,
        fn=fn,
        injected=tuple(injected_names),
        schema_descriptions=descriptions or None,
    )
    return tool


@overload
def tool_fn(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool_fn(
    *,
    name: str | None = None,
    description: str | None = None,
    injected: Iterable[str] = (),
    metadata: ToolMetadata | None = None,
    flat: bool = False,
    **options: Any,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool_fn(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    injected: Iterable[str] = (),
    metadata: ToolMetadata | None = None,
    flat: bool = False,
    **options: Any,
) -> Any:
    """Make a tool from a sync or async function.

    The input model is generated from the signature (named after the function
    in UpperCamel case); the description and parameter descriptions come from
    the docstring (Google, NumPy or Sphinx style). Parameters listed in
    ``injected`` or annotated ``Annotated[T, Injected]`` stay out of the
    schema and are passed by the caller to ``.call(input, name=value)``.
    Metadata keywords (``effect``, ``retry_hint``, ``timeout``, ``capabilities``,
    ``version``, ``typical_duration``, ``idempotent``, ``blocking``,
    ``run_alone``) or ``metadata=ToolMetadata(...)`` describe the tool.

    A function whose one parameter is a pydantic model gets, by default, a
    schema with that one parameter (``{"request": {...the model...}}``).
    ``flat=True`` makes the model's fields the tool's parameters instead (the
    form pydantic-ai uses by default); the function is then called with the
    validated model. Injected parameters may sit beside it either way.
    """
    injected = tuple(injected)

    def wrap(f: Callable[..., Any]) -> FunctionTool[Any, Any]:
        return _build_function_tool(
            f,
            name=name,
            description=description,
            injected=injected,
            metadata=metadata,
            options=options,
            flat=flat,
        )

    if fn is not None:
        return wrap(fn)
    return wrap


@overload
def tool_input(model: _ModelT, /) -> _ModelT: ...
@overload
def tool_input(
    model: None = None,
    /,
    *,
    name: str | None = None,
    output: Any = None,
    description: str | None = None,
    metadata: ToolMetadata | None = None,
    **options: Any,
) -> Callable[[_ModelT], _ModelT]: ...
def tool_input(
    model: _ModelT | None = None,
    /,
    *,
    name: str | None = None,
    output: Any = None,
    description: str | None = None,
    metadata: ToolMetadata | None = None,
    **options: Any,
) -> _ModelT | Callable[[_ModelT], _ModelT]:
    """Declare a pydantic model as a tool's input; the class is returned unchanged.

    The tool name defaults to the snake_case class name, the description to
    the class docstring; field descriptions come from ``Field(description=...)``
    and attribute docstrings. ``output`` is the output type. The tool object
    is available as ``tool_of(Model)``; toolsets accept the class directly.

    A class with a ``run(self)`` method (sync or ``async``) is its own
    implementation: the validated input's ``run()`` is what the tool does, and
    its return value is the output. Without one, the tool has no implementation:
    your own loop answers its calls (``call.complete(output)``), and an Agent or
    an Executor given it refuses it when it is made.
    """

    def wrap(cls: _ModelT) -> _ModelT:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            raise ToolDefinitionError(
                f"@tool_input goes on a pydantic BaseModel subclass, got {cls!r}"
            )
        doc = inspect.getdoc(cls) if cls.__doc__ else ""
        if cls.__doc__ is None or cls.__doc__ == BaseModel.__doc__:
            doc = ""
        parsed = parse_docstring(doc)
        descriptions = {**attribute_docstrings(cls), **parsed.params}
        meta = _metadata_from(metadata, _split_meta(dict(options)))
        tool: Tool[Any, Any] = Tool(
            name=name or _snake(cls.__name__),
            description=description if description is not None else parsed.description,
            input_type=cls,
            output_type=output,
            metadata=meta,
            schema_descriptions=descriptions,
            fn=_run_method(cls),
        )
        setattr(cls, "__toolwire_tool__", tool)
        return cls

    if model is not None:
        return wrap(model)
    return wrap


def _run_method(cls: type[BaseModel]) -> Callable[..., Any] | None:
    """The implementation a @tool_input class carries: its ``run(self)`` method, called on
    the validated input (rebuilt from its fields without validating them again)."""
    run = getattr(cls, "run", None)
    if not callable(run):
        return None
    build = cls.model_construct
    if inspect.iscoroutinefunction(run):

        async def run_async(**fields: Any) -> Any:
            return await build(**fields).run()  # type: ignore[attr-defined]

        run_async.__qualname__ = f"{cls.__qualname__}.run"
        return run_async

    def run_sync(**fields: Any) -> Any:
        return build(**fields).run()  # type: ignore[attr-defined]

    run_sync.__qualname__ = f"{cls.__qualname__}.run"
    return run_sync


def _unrunnable(tools: Iterable[Tool[Any, Any]], who: str) -> None:
    """Raise UsageError naming the tools that have no implementation (a @tool_input
    class without ``run``), with how to give them one."""
    missing = [t.name for t in tools if t.fn is None]
    if missing:
        names = ", ".join(f"`{n}`" for n in missing)
        raise UsageError(
            f"{who} cannot run {names}: declared with @tool_input and no implementation. "
            f"Give the class a `run(self)` method (its return value is the output), declare "
            f"the tool with @tool_fn, or answer its calls in your own loop with "
            f"call.complete(output)"
        )


def tool_of(obj: Any) -> Tool[Any, Any]:
    """The Tool for a tool object, a @tool_input class, or a plain function (wrapped)."""
    if isinstance(obj, Tool):
        return obj
    found = getattr(obj, "__toolwire_tool__", None) if isinstance(obj, type) else None
    if isinstance(found, Tool):
        return found
    if isinstance(obj, type) and issubclass(obj, BaseModel):
        raise ToolDefinitionError(
            f"{obj.__qualname__} is a pydantic model but not a tool; decorate it with @tool_input"
        )
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return tool_fn(obj)
    raise ToolDefinitionError(
        f"expected a Tool, a @tool_input model or a function, got {obj!r} ({type(obj).__name__})"
    )


def raw_tool(
    name: str,
    description: str,
    schema: Mapping[str, Any],
    fn: Callable[..., Any] | None = None,
    *,
    metadata: ToolMetadata | None = None,
    output_schema: Mapping[str, Any] | None = None,
    **options: Any,
) -> Tool[dict[str, Any], Any]:
    """A tool from a JSON schema; its input is the validated argument dict.

    ``fn`` (optional) is called with the argument dict's items as keywords.
    The schema is checked at definition time (Draft 2020-12), and so is
    ``output_schema`` (optional), which describes the tool's output in its
    definition (an MCP server's ``outputSchema``, say); checking an output
    against it is the caller's.
    """
    _check_name(name)
    clean = check_raw_schema(schema, tool=name)
    meta = _metadata_from(metadata, _split_meta(dict(options)))
    tool: Tool[dict[str, Any], Any] = Tool(
        name=name,
        description=description,
        input_type=dict,
        metadata=meta,
        fn=fn,
        input_schema=clean,
    )
    if output_schema is not None:
        tool._output_schema = check_raw_schema(output_schema, tool=f"{name} (output)")
    return tool


#: The most of a tool file :func:`raw_tool_from_file` reads.
class Selector(str):
    """Identifies one tool of a toolset by its wire name; serialises as that name.

    A ``str`` subclass, so ``json.dumps`` and pydantic write it as the name, and it
    compares equal to it. ``Toolset.selector_schema()`` is the JSON Schema of a toolset's
    selectors (the enum of its wire names).
    """

    __slots__ = ()

    def __new__(cls, name: str) -> Selector:
        if not isinstance(name, str):
            raise UsageError(f"a Selector is a tool's wire name, got {type(name).__name__}")
        return super().__new__(cls, name)

    @property
    def name(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Selector({str.__str__(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Selector, (str.__str__(self),))

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return pydantic_core.core_schema.no_info_after_validator_function(
            cls,
            pydantic_core.core_schema.str_schema(),
            serialization=pydantic_core.core_schema.to_string_ser_schema(),
        )


SelectorLike = Union[Selector, str, Tool[Any, Any], type, Callable[..., Any]]

publish(globals())
