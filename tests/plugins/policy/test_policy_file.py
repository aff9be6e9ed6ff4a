"""The policy file: where it is found, and a clear error for every way it can be wrong."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from toolwire import PolicyError
from toolwire.exceptions import PluginError
from toolwire_policy import (
    Policy,
    PolicyConfig,
    PolicyFileError,
    find_policy_file,
    parse_policy_text,
    policy_paths,
    project_trust,
    trust_policy_file,
    trust_store_path,
    untrust_policy_file,
)

WritePolicy = Callable[[str], Path]


def problems(text: str) -> list[tuple[str, str]]:
    """The (key, message) pairs parsing ``text`` reports."""
    with pytest.raises(PolicyFileError) as info:
        parse_policy_text(text, "policy.toml")
    return list(info.value.problems)


# -- good files ----------------------------------------------------------------------------


def test_an_empty_file_allows_everything() -> None:
    config = parse_policy_text("", "policy.toml")
    assert (["*"], [], [], None) == (config.allow, config.deny, config.constraints, config.audit)


def test_the_readme_example_parses() -> None:
    readme = Path(__file__).parents[3] / "plugins" / "policy" / "README.md"
    blocks = re.findall(r"```toml\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no TOML example"
    config = parse_policy_text(blocks[0], readme)
    assert (["destructive"], ["mutating"], 2) == (
        config.deny_effects,
        config.approve_effects,
        len(config.constraints),
    )


def test_a_policy_config_is_frozen() -> None:
    config = PolicyConfig()
    with pytest.raises(ValueError, match="frozen"):
        config.deny = ["x"]  # type: ignore[misc]


# -- the error itself ----------------------------------------------------------------------


def test_the_error_names_the_file_and_blocks_execution(policy_file: WritePolicy) -> None:
    path = policy_file("deny = 'shell'\n")
    with pytest.raises(PolicyFileError) as info:
        Policy.from_file(path)
    assert (
        f"policy file '{path}' is invalid; tool execution is blocked until it is fixed:\n"
        "  deny: Input should be a valid list, got 'shell' (str)"
    ) == str(info.value)


def test_the_error_is_a_policy_error_attributed_to_the_plugin(policy_file: WritePolicy) -> None:
    with pytest.raises(PolicyFileError) as info:
        Policy.from_file(policy_file("nope = 1\n"))
    err = info.value
    assert (True, True, "policy", "toolwire-policy") == (
        isinstance(err, PolicyError),
        isinstance(err, PluginError),
        err.plugin,
        err.distribution,
    )


def test_every_problem_is_reported_at_once() -> None:
    assert [
        ("deny", "Input should be a valid list, got 'x' (str)"),
        ("approve", "Input should be a valid list, got 3 (int)"),
    ] == problems("deny = 'x'\napprove = 3\n")


# -- malformed files -----------------------------------------------------------------------


def test_bad_toml_names_the_line() -> None:
    [(key, message)] = problems("allow = []\ndeny ['x']\n")
    assert ("", "not valid TOML: Expected '=' after a key in a key/value pair (at line 2") == (
        key,
        message[: message.index(", column")],
    )


def test_an_unknown_top_level_key() -> None:
    assert [
        (
            "deny_effect",
            "unknown key at the top level; allowed keys: allow, deny, deny_effects, mode, "
            "unknown_effect, approve, approve_effects, effects, trusted_mcp_servers, "
            "constraints, redact, result_media, max_result_bytes, audit, require_principal, "
            "principal_methods, rules, quotas, quota_store, approvals",
        )
    ] == problems("deny_effect = ['destructive']\n")


def test_an_unknown_key_in_a_constraints_table() -> None:
    text = "[[constraints]]\nmax_length = 3\n\n[[constraints]]\nmax_len = 3\n"
    assert [
        (
            "constraints[1].max_len",
            "unknown key in table constraints[1]; allowed keys: tools, subjects, groups, "
            "arguments, max_length, deny_patterns",
        )
    ] == problems(text)


def test_an_unknown_key_in_the_audit_table() -> None:
    assert [
        (
            "audit.file",
            "unknown key in table audit; allowed keys: path, results, arguments, context_keys, "
            "readers",
        )
    ] == problems("[audit]\npath = 'a.jsonl'\nfile = 'x'\n")


def test_an_unknown_key_in_a_redact_table() -> None:
    assert [
        (
            "redact[0].argument",
            "unknown key in table redact[0]; allowed keys: tools, subjects, groups, arguments, "
            "result_patterns",
        )
    ] == problems("[[redact]]\narguments = ['a']\nargument = ['b']\n")


def test_a_list_item_of_the_wrong_type() -> None:
    assert [("deny[1]", "Input should be a valid string, got 1 (int)")] == problems(
        "deny = ['a', 1]\n"
    )


def test_an_unknown_effect() -> None:
    assert [
        (
            "deny_effects[0]",
            "Input should be 'read_only', 'mutating' or 'destructive', got 'destroy' (str)",
        )
    ] == problems("deny_effects = ['destroy']\n")


def test_an_empty_glob() -> None:
    assert [("allow[0]", "String should have at least 1 character, got '' (str)")] == problems(
        "allow = ['']\n"
    )


def test_a_bad_regex_in_deny_patterns() -> None:
    assert [
        (
            "constraints[0].deny_patterns[1]",
            "invalid regular expression '([a-z]': missing ), unterminated subpattern at position 0",
        )
    ] == problems("[[constraints]]\ndeny_patterns = ['ok', '([a-z]']\n")


def test_a_bad_regex_in_result_patterns() -> None:
    assert [
        (
            "redact[0].result_patterns[0]",
            "invalid regular expression '*x': nothing to repeat at position 0",
        )
    ] == problems("[[redact]]\nresult_patterns = ['*x']\n")


def test_max_length_must_be_positive() -> None:
    assert [
        ("constraints[0].max_length", "Input should be greater than or equal to 1, got 0 (int)")
    ] == problems("[[constraints]]\nmax_length = 0\n")


def test_max_length_must_be_an_integer_not_a_bool_or_string() -> None:
    assert [
        ("constraints[0].max_length", "Input should be a valid integer, got True (bool)"),
        ("constraints[1].max_length", "Input should be a valid integer, got '10' (str)"),
    ] == problems("[[constraints]]\nmax_length = true\n[[constraints]]\nmax_length = '10'\n")


def test_a_constraint_that_constrains_nothing() -> None:
    assert [
        (
            "constraints[0]",
            "a [[constraints]] table needs max_length or deny_patterns (or both)",
        )
    ] == problems("[[constraints]]\ntools = ['x']\n")


def test_a_redact_table_that_redacts_nothing() -> None:
    assert [
        ("redact[0]", "a [[redact]] table needs arguments or result_patterns (or both)")
    ] == problems("[[redact]]\ntools = ['x']\n")


def test_constraints_must_be_an_array_of_tables() -> None:
    assert [
        ("constraints", "Input should be a valid list, got {'max_length': 3} (dict)")
    ] == problems("[constraints]\nmax_length = 3\n")


def test_audit_needs_a_path() -> None:
    assert [("audit.path", "missing required key")] == problems("[audit]\nresults = false\n")


def test_audit_flags_must_be_booleans() -> None:
    assert [("audit.results", "Input should be a valid boolean, got 'yes' (str)")] == problems(
        "[audit]\npath = 'a'\nresults = 'yes'\n"
    )


def test_an_audit_log_that_cannot_be_opened(policy_file: WritePolicy, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    path = policy_file("[audit]\npath = 'afile/audit.jsonl'\n")
    with pytest.raises(PolicyFileError) as info:
        Policy.from_file(path)
    [(key, message)] = info.value.problems
    assert ("audit.path", True) == (
        key,
        message.startswith(f"cannot append to '{tmp_path / 'afile' / 'audit.jsonl'}': "),
    )


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_bytes(b"deny = ['\xff']\n")
    with pytest.raises(PolicyFileError) as info:
        Policy.from_file(path)
    assert [("", "the file is not UTF-8 text")] == list(info.value.problems)


def test_a_huge_file_is_refused_without_being_read(tmp_path: Path) -> None:
    # Reproducer: read_text() read all of it (a 64 MiB file into memory; /dev/zero for ever).
    path = tmp_path / "policy.toml"
    with path.open("wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse: nothing is written
    tracemalloc.start()
    try:
        with pytest.raises(PolicyFileError) as info:
            Policy.from_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [("", "the file is over 1048576 characters")] == list(info.value.problems)
    assert peak < 8 * 1024 * 1024


def test_crlf_and_lf_files_read_the_same(tmp_path: Path) -> None:
    text = "deny = ['delete_*']\ndeny_effects = ['destructive']\n"
    lf, crlf = tmp_path / "lf.toml", tmp_path / "crlf.toml"
    lf.write_bytes(text.encode())
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    assert Policy.from_file(lf).config == Policy.from_file(crlf).config


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError) as info:
        Policy.from_file(tmp_path / "nope.toml")
    assert [("", "the file does not exist")] == list(info.value.problems)


# -- finding the file ----------------------------------------------------------------------


def test_toolwire_policy_names_the_file(policy_file: WritePolicy) -> None:
    path = policy_file("")
    assert path == find_policy_file({"TOOLWIRE_POLICY": str(path)}, cwd=path.parent)


def test_a_named_file_that_is_missing_is_an_error_not_no_policy(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError) as info:
        find_policy_file({"TOOLWIRE_POLICY": str(tmp_path / "gone.toml")}, cwd=tmp_path)
    assert [("", "the file named by TOOLWIRE_POLICY does not exist or is not a file")] == list(
        info.value.problems
    )


def test_the_organisation_config_home_comes_before_the_working_directory(
    tmp_path: Path,
) -> None:
    # A project must not be able to override the organisation's policy with its own file.
    home = tmp_path / "config"
    (home / "toolwire").mkdir(parents=True)
    (home / "toolwire" / "policy.toml").write_text("")
    (tmp_path / "toolwire-policy.toml").write_text("")
    env = {"XDG_CONFIG_HOME": str(home)}
    assert home / "toolwire" / "policy.toml" == find_policy_file(env, cwd=tmp_path)


def test_an_untrusted_project_file_is_not_used(tmp_path: Path) -> None:
    # Attack (#40.2): ./toolwire-policy.toml was read wherever a command started, so a
    # cloned repository's file applied silently, and its [audit] path appended to any
    # file the user could write.
    (tmp_path / "toolwire-policy.toml").write_text("[audit]\npath = 'victim.txt'\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert find_policy_file(env, cwd=tmp_path) is None
    assert "untrusted" == project_trust(tmp_path / "toolwire-policy.toml", env)


def test_a_trusted_project_file_is_used_when_the_config_home_has_none(tmp_path: Path) -> None:
    project = tmp_path / "toolwire-policy.toml"
    project.write_text("deny = ['shell']\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert project == trust_policy_file(project, env)
    assert project == find_policy_file(env, cwd=tmp_path)
    store = trust_store_path(env)
    assert 0o600 == store.stat().st_mode & 0o777


def test_a_trusted_project_file_that_changed_blocks_every_call(tmp_path: Path) -> None:
    project = tmp_path / "toolwire-policy.toml"
    project.write_text("deny = ['shell']\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    trust_policy_file(project, env)
    project.write_text("deny = []\n")  # a pull loosened it
    with pytest.raises(PolicyFileError, match="changed since you trusted it"):
        find_policy_file(env, cwd=tmp_path)
    assert untrust_policy_file(project, env)
    assert find_policy_file(env, cwd=tmp_path) is None


def test_a_malformed_project_file_cannot_be_trusted(tmp_path: Path) -> None:
    project = tmp_path / "toolwire-policy.toml"
    project.write_text("deny = 'shell'\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    with pytest.raises(PolicyFileError, match="deny"):
        trust_policy_file(project, env)
    assert not trust_store_path(env).exists()


@pytest.mark.parametrize("content", ["[", '{"trusted": []}', '{"trusted": {"a": 1}}'])
def test_a_malformed_trust_store_is_an_error(tmp_path: Path, content: str) -> None:
    (tmp_path / "toolwire-policy.toml").write_text("")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    trust_store_path(env).parent.mkdir(parents=True)
    trust_store_path(env).write_text(content)
    with pytest.raises(PolicyFileError, match="the trust store is malformed"):
        find_policy_file(env, cwd=tmp_path)


def test_a_trust_store_others_may_write_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "toolwire-policy.toml"
    project.write_text("")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    trust_policy_file(project, env)
    trust_store_path(env).chmod(0o666)
    with pytest.raises(PolicyFileError, match="open to others"):
        find_policy_file(env, cwd=tmp_path)


def test_the_named_file_comes_before_the_config_home_and_the_working_directory(
    tmp_path: Path,
) -> None:
    home = tmp_path / "config"
    (home / "toolwire").mkdir(parents=True)
    (home / "toolwire" / "policy.toml").write_text("")
    (tmp_path / "toolwire-policy.toml").write_text("")
    (tmp_path / "named.toml").write_text("")
    env = {"XDG_CONFIG_HOME": str(home), "TOOLWIRE_POLICY": str(tmp_path / "named.toml")}
    assert tmp_path / "named.toml" == find_policy_file(env, cwd=tmp_path)


def test_the_config_home_is_used_when_the_working_directory_has_none(tmp_path: Path) -> None:
    home = tmp_path / "config"
    (home / "toolwire").mkdir(parents=True)
    (home / "toolwire" / "policy.toml").write_text("")
    found = find_policy_file({"XDG_CONFIG_HOME": str(home)}, cwd=tmp_path)
    assert home / "toolwire" / "policy.toml" == found


def test_the_default_config_home_is_dot_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert [
        tmp_path / ".config" / "toolwire" / "policy.toml",
        tmp_path / "work" / "toolwire-policy.toml",
    ] == policy_paths({}, cwd=tmp_path / "work")


def test_no_file_anywhere_is_no_policy(tmp_path: Path) -> None:
    assert find_policy_file({"XDG_CONFIG_HOME": str(tmp_path / "c")}, cwd=tmp_path) is None


def test_no_file_when_one_is_required_is_an_error(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "c"), "TOOLWIRE_POLICY_REQUIRED": "1"}
    with pytest.raises(PolicyFileError) as info:
        find_policy_file(env, cwd=tmp_path)
    [(key, message)] = info.value.problems
    assert ("", True) == (
        key,
        message.startswith("no policy file found (TOOLWIRE_POLICY_REQUIRED is set); looked for"),
    )


@pytest.mark.parametrize("kind", ["directory", "dangling symlink"])
def test_an_unreadable_organisation_policy_is_an_error_not_no_policy(
    tmp_path: Path, kind: str
) -> None:
    # Attack (#11.5): a directory or a dangling symlink at the organisation's path was
    # treated as absent, and the project's file (or no policy at all) took over.
    home = tmp_path / "config"
    (home / "toolwire").mkdir(parents=True)
    org = home / "toolwire" / "policy.toml"
    if kind == "directory":
        org.mkdir()
    else:
        org.symlink_to(tmp_path / "gone.toml")
    (tmp_path / "toolwire-policy.toml").write_text("approve = []\n")  # the project's, laxer
    with pytest.raises(PolicyFileError, match="the policy path is"):
        find_policy_file({"XDG_CONFIG_HOME": str(home)}, cwd=tmp_path)


def test_an_unreadable_policy_blocks_every_call(tmp_path: Path) -> None:
    from toolwire_policy import PolicyPlugin

    home = tmp_path / "config"
    (home / "toolwire" / "policy.toml").mkdir(parents=True)
    plugin = PolicyPlugin.from_env({"XDG_CONFIG_HOME": str(home)}, cwd=tmp_path)
    assert plugin.error is not None
    assert "the policy path is not a regular file" in str(plugin.error)


@pytest.mark.parametrize("mode", [0o666, 0o646])
def test_a_policy_file_others_could_write_is_refused(tmp_path: Path, mode: int) -> None:
    # The same pattern as toolwire-mcp's trust store: whoever can write the policy file
    # decides what the policy allows. Fails closed with the reason.
    from toolwire_policy._config import read_policy_file

    path = tmp_path / "policy.toml"
    path.write_text('deny = ["rm"]\n')
    path.chmod(0o644)
    assert ("rm",) == tuple(read_policy_file(path).deny)
    path.chmod(mode)
    with pytest.raises(PolicyError, match="open to others"):
        read_policy_file(path)


def test_the_checkouts_example_policy_governs_nothing_run_from_the_repository(
    tmp_path: Path,
) -> None:
    # #40: the checkout's example toolwire-policy.toml governed every in-process call run
    # from the repository root (an outside suite failed 13 tests for that alone). A
    # working directory decides nothing until its file is trusted.
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    assert (root / "toolwire-policy.toml").is_file()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    code = "from toolwire_policy import PolicyPlugin; print(PolicyPlugin.from_env().state)"

    def state() -> str:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
            timeout=60, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    assert "inert" == state()
    trust_policy_file(root / "toolwire-policy.toml", env)
    assert "active" == state()
