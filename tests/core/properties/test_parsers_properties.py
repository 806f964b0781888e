"""Property tests (hypothesis) of the string parsers users feed: any input either parses to a
value that round-trips, or raises the documented error (never another exception)."""

from __future__ import annotations

from typing import Any, Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchx import specs
from torchx.specs.api import MalformedAppHandleException
from torchx.specs.builders import component_args_from_str

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# words that need no quoting in any of the grammars: no `=`, `,`, `;`, `:`, blanks or quotes
WORD = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./@+"),
    min_size=1,
    max_size=12,
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def _component(
    i: int,
    f: float,
    s: str,
    b: bool,
    words: list[str],
    labels: dict[str, str],
    o: Optional[int] = None,
    *rest: str,
) -> specs.AppDef:
    """A component with one parameter of every kind the CLI decodes.

    Args:
        i: an int
        f: a float
        s: a string
        b: a bool
        words: a list of strings
        labels: a dict of strings
        o: an optional int
        rest: the remaining arguments
    """
    return specs.AppDef("props")


@SETTINGS
@given(
    i=st.integers(),
    f=FLOATS,
    s=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=20),
    b=st.booleans(),
    words=st.lists(WORD, min_size=1, max_size=5),
    labels=st.dictionaries(WORD, WORD, min_size=1, max_size=4),
    o=st.none() | st.integers(),
    rest=st.lists(st.text(max_size=8).filter(lambda x: "\0" not in x), max_size=4),
)
def test_component_arguments_round_trip(
    i: int,
    f: float,
    s: str,
    b: bool,
    words: list[str],
    labels: dict[str, str],
    o: Optional[int],
    rest: list[str],
) -> None:
    argv = [f"--i={i}", f"--f={f!r}", f"--s={s}", f"--b={b}", f"--words={','.join(words)}"]
    argv += ["--labels=" + ",".join(f"{k}={v}" for k, v in labels.items())]
    if o is not None:
        argv += ["--o", str(o)]
    argv += ["--", *rest]
    parsed = component_args_from_str(_component, argv)
    expected = {"i": i, "f": f, "s": s, "b": b, "words": words, "labels": labels, "o": o}
    assert parsed.positional_args == expected
    assert parsed.var_args == rest


@SETTINGS
@given(st.lists(st.text(max_size=12).filter(lambda x: "\0" not in x), max_size=6))
def test_component_arguments_parse_or_raise_value_error(argv: list[str]) -> None:
    try:
        parsed = component_args_from_str(_component, argv)
    except ValueError as e:  # ComponentArgsError is a ValueError with one line
        assert "\n" not in str(e).strip()
        return
    assert isinstance(parsed.positional_args["i"], int)


def _opts() -> specs.runopts:
    opts = specs.runopts()
    opts.add("name", type_=str, help="a string")
    opts.add("count", type_=int, help="an int")
    opts.add("ratio", type_=float, help="a float")
    opts.add("flag", type_=bool, help="a bool")
    opts.add("tags", type_=list[str], help="a list")
    opts.add("labels", type_=dict[str, str], help="a dict")
    return opts


@SETTINGS
@given(
    values=st.fixed_dictionaries(
        {},
        optional={
            "name": WORD,
            "count": st.integers(),
            "ratio": FLOATS,
            "flag": st.booleans(),
            "tags": st.lists(WORD, min_size=1, max_size=4),
            "labels": st.dictionaries(WORD, WORD, min_size=1, max_size=3),
        },
    ),
    list_delim=st.sampled_from([",", ";"]),
)
def test_runopts_round_trip(values: dict[str, Any], list_delim: str) -> None:
    def render(key: str, value: Any) -> str:
        if isinstance(value, list):
            return list_delim.join(value)
        if isinstance(value, dict):
            return ";".join(f"{k}:{v}" for k, v in value.items())
        return repr(value) if isinstance(value, float) else str(value)

    text = ",".join(f"{key}={render(key, value)}" for key, value in values.items())
    assert _opts().cfg_from_str(text) == values


@SETTINGS
@given(st.text(max_size=40))
def test_runopts_parse_or_raise_value_error(text: str) -> None:
    try:
        cfg = _opts().cfg_from_str(text)
    except ValueError:
        return
    types = {"name": str, "count": int, "ratio": float, "flag": bool, "tags": list, "labels": dict}
    for key, value in cfg.items():
        assert isinstance(value, types[key]), (key, value)


HANDLE_PART = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789_-."), min_size=1, max_size=16
)


@SETTINGS
@given(
    scheduler=st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
    session=HANDLE_PART,
    app_id=HANDLE_PART,
)
def test_app_handle_round_trip(scheduler: str, session: str, app_id: str) -> None:
    handle = specs.make_app_handle(scheduler, session, app_id)
    parsed = specs.parse_app_handle(handle)
    assert (parsed.scheduler_backend, parsed.session_name, parsed.app_id) == (
        scheduler,
        session,
        app_id,
    )
    assert specs.make_app_handle(*parsed) == handle


@SETTINGS
@given(st.text(max_size=40))
def test_app_handle_parse_or_raise_malformed(text: str) -> None:
    try:
        parsed = specs.parse_app_handle(text)
    except MalformedAppHandleException as e:
        assert "is not of the form" in str(e)
        return
    assert specs.parse_app_handle(specs.make_app_handle(*parsed)) == parsed


PATH = st.lists(WORD, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))
MOUNTS = st.lists(
    st.one_of(
        st.builds(specs.BindMount, src_path=PATH, dst_path=PATH, read_only=st.booleans()),
        st.builds(specs.VolumeMount, src=WORD, dst_path=PATH, read_only=st.booleans()),
        st.builds(
            specs.DeviceMount,
            src_path=PATH,
            dst_path=PATH,
            permissions=st.sampled_from(["r", "w", "m", "rw", "rwm", "wm"]),
        ),
    ),
    max_size=4,
)


def _mount_opts(mount: Any) -> list[str]:
    if isinstance(mount, specs.BindMount):
        opts = ["type=bind", f"src={mount.src_path}", f"dst={mount.dst_path}"]
        return opts + (["readonly"] if mount.read_only else [])
    if isinstance(mount, specs.VolumeMount):
        opts = ["type=volume", f"src={mount.src}", f"dst={mount.dst_path}"]
        return opts + (["readonly"] if mount.read_only else [])
    return [
        "type=device",
        f"src={mount.src_path}",
        f"dst={mount.dst_path}",
        f"perm={mount.permissions}",
    ]


@SETTINGS
@given(MOUNTS)
def test_mounts_round_trip(mounts: list[Any]) -> None:
    opts = [opt for mount in mounts for opt in _mount_opts(mount)]
    assert specs.parse_mounts(opts) == mounts


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12),
            st.sampled_from(["type=bind", "type=volume", "type=device", "src=/a", "dst=/b"]),
            st.sampled_from(["readonly", "perm=rw", "perm=x", "type=tmpfs", "target=/c"]),
        ),
        max_size=8,
    )
)
def test_mounts_parse_or_raise_documented_errors(opts: list[str]) -> None:
    try:
        mounts = specs.parse_mounts(opts)
    except (KeyError, ValueError):
        return
    assert len(mounts) == sum(1 for opt in opts if opt.partition("=")[0].strip() == "type")
