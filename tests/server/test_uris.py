"""The URIs the server writes before pygls is imported (`wire_json.uri`) are pygls's own (`from_fs_path`): the
editor keys its diagnostics by the URI string, so one file written two ways would show twice."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from oscova_lsp.lsp.wire_json import uri
from pygls.uris import from_fs_path

# Names as workspaces hold them and as they break URIs: spaces, '%', '#', '?', ';', ':', unicode, drive-like
# and share-like beginnings.
segments = st.text(alphabet=st.sampled_from("aZ0_- .%#?;:@!$&'()+,=~é中\\") | st.characters(exclude_categories=["Cs"]),
                   min_size=0, max_size=8)
paths = st.builds(lambda parts, lead: lead + "/".join(parts), st.lists(segments, max_size=5),
                  st.sampled_from(["/", "//", "/C:", "/c:/", "", "./", "///"]))


@settings(max_examples=400, derandomize=True, deadline=None)
@given(paths)
def test_every_path_is_written_as_pygls_writes_it(path: str) -> None:
    uri.cache_clear()
    assert _outcome(uri, path) == _outcome(lambda p: from_fs_path(p) or p, path)


def _outcome(write, path: str) -> object:
    try:
        return write(path)
    except Exception as error:  # noqa: BLE001 - pygls fails on a share with no folder ("//x"): so must we
        return type(error)
