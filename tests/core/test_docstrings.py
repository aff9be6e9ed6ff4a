"""Docstring parsing: Google, NumPy and Sphinx styles; malformed docstrings never raise."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import toolwire as tw

GOOGLE = """Get the weather.

    For one city.

    Args:
        city (str): The city
            name, continued.
        days: Number of days.
        **extra: Anything else.

    Returns:
        str: The forecast.

    Raises:
        ValueError: Never.
    """

NUMPY = """Get the weather.

    Parameters
    ----------
    city : str
        The city
        name.
    days, hours : int
        Counts.

    Returns
    -------
    str
        The forecast.
    """

SPHINX = """Get the weather.

    :param city: The city
        name.
    :param int days: Number of days.
    :type days: int
    :returns: The forecast.
    :raises ValueError: Never.
    """


def test_google_params_with_types_and_continuations() -> None:
    expected = {
        "city": "The city name, continued.",
        "days": "Number of days.",
        "extra": "Anything else.",
    }
    assert expected == tw.schema.parse_docstring(GOOGLE).params


def test_google_description_stops_at_the_first_section() -> None:
    assert "Get the weather.\nFor one city." == tw.schema.parse_docstring(GOOGLE).description


def test_google_returns() -> None:
    assert "str: The forecast." == tw.schema.parse_docstring(GOOGLE).returns


def test_google_blank_line_inside_args_keeps_later_params() -> None:
    doc = "Summary.\n\nArgs:\n    a: First.\n\n    b: Second.\n"
    assert {"a": "First.", "b": "Second."} == tw.schema.parse_docstring(doc).params


def test_google_other_sections_are_left_out_of_the_description() -> None:
    doc = "Summary.\n\nExample:\n    f(1)\n\nNote:\n    Careful.\n"
    assert "Summary." == tw.schema.parse_docstring(doc).description


def test_numpy_params_with_multi_line_descriptions() -> None:
    expected = {"city": "The city name.", "days": "Counts.", "hours": "Counts."}
    assert expected == tw.schema.parse_docstring(NUMPY).params


def test_numpy_description() -> None:
    assert "Get the weather." == tw.schema.parse_docstring(NUMPY).description


def test_numpy_returns() -> None:
    assert "str\nThe forecast." == tw.schema.parse_docstring(NUMPY).returns


def test_sphinx_params_with_types_and_continuations() -> None:
    assert {"city": "The city name.", "days": "Number of days."} == tw.schema.parse_docstring(
        SPHINX
    ).params


def test_sphinx_description() -> None:
    assert "Get the weather." == tw.schema.parse_docstring(SPHINX).description


def test_sphinx_returns() -> None:
    assert "The forecast." == tw.schema.parse_docstring(SPHINX).returns


def test_no_sections_is_all_description() -> None:
    doc = "Line one.\n\n  Line two.  \n"
    assert ("Line one.\nLine two.", {}) == (
        tw.schema.parse_docstring(doc).description,
        tw.schema.parse_docstring(doc).params,
    )


def test_missing_docstring() -> None:
    parsed = tw.schema.parse_docstring(None)
    assert ("", {}, None) == (parsed.description, parsed.params, parsed.returns)


def test_empty_args_section() -> None:
    assert {} == tw.schema.parse_docstring("Summary.\n\nArgs:\n").params


def test_param_without_description_in_numpy_is_empty() -> None:
    doc = "Summary.\n\nParameters\n----------\nflag\n"
    assert {"flag": ""} == tw.schema.parse_docstring(doc).params


def test_undocumented_parameter_gets_no_description() -> None:
    @tw.tool_fn
    def f(a: int, b: int) -> int:
        """Add.

        Args:
            a: The first.
        """
        return a + b

    assert ("The first.", None) == (
        f.input_schema["properties"]["a"].get("description"),
        f.input_schema["properties"]["b"].get("description"),
    )


def test_numpy_docstring_on_a_tool_fn() -> None:
    def f(city: str, days: int, hours: int) -> str:
        return ""

    f.__doc__ = NUMPY
    tool = tw.tool_fn(f)
    props = tool.input_schema["properties"]
    assert ("Get the weather.", "The city name.", "Counts.") == (
        tool.description,
        props["city"]["description"],
        props["hours"]["description"],
    )


def test_sphinx_docstring_on_a_tool_fn() -> None:
    def f(city: str, days: int) -> str:
        return ""

    f.__doc__ = SPHINX
    props = tw.tool_fn(f).input_schema["properties"]
    assert ("The city name.", "Number of days.") == (
        props["city"]["description"],
        props["days"]["description"],
    )


_lines = st.lists(
    st.one_of(
        st.text(max_size=30),
        st.sampled_from(
            [
                "Args:",
                "Returns:",
                "Parameters",
                "----------",
                "---",
                ":param x:",
                ":param:",
                ":type x: int",
                "    x (int: y",
                "    x: y",
                "  :",
                "x : int",
                "**kwargs",
                "\t",
                "",
            ]
        ),
    ),
    max_size=20,
)


@given(_lines)
def test_malformed_docstrings_never_raise(lines: list[str]) -> None:
    parsed = tw.schema.parse_docstring("\n".join(lines))
    assert (str, dict) == (type(parsed.description), type(parsed.params))


@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    assert isinstance(tw.schema.parse_docstring(text).params, dict)
