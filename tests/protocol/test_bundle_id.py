"""BundleID rules (spec-0.3 data-structures.md): the conformance vectors of the protocol
repository (copied unchanged from spec-0.3/fixtures), explicit-value checks, exposed names."""

from __future__ import annotations

import json
import pathlib

import pytest

from smcp_sync.protocol.bundle_id import (
    InvalidBundleId,
    check_bundle_id,
    exposed_tool_name,
    resolve_bundle_id,
)

VECTORS = json.loads((pathlib.Path(__file__).with_name("bundle_id_conformance_vectors.json")).read_text("utf-8"))


def _server_config(vector: dict) -> dict:
    """A vector's flat connection identity as the official SDK's config shape."""
    flat = dict(vector["config"])
    kind, explicit = flat.pop("type"), flat.pop("bundle_id", None)
    config = {"name": vector["name"], "type": kind, "server_parameters": flat}
    if explicit is not None:
        config["bundle_id"] = explicit
    return config


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=[v["desc"] for v in VECTORS["vectors"]])
def test_conformance_vector(vector):
    assert resolve_bundle_id(_server_config(vector)) == vector["expected_bundle_id"]


def test_the_fallback_digests_the_raw_config_not_its_rendering():
    raw = {"name": "", "type": "stdio", "server_parameters": {"command": "node", "env": {"K": "${input:k}"}}}
    rendered = {**raw, "server_parameters": {"command": "node", "env": {"K": "secret"}}}
    assert resolve_bundle_id(raw) != resolve_bundle_id(rendered)
    assert resolve_bundle_id(raw) == resolve_bundle_id(dict(raw))


def test_missing_args_and_env_frame_like_empty_ones():
    bare = {"name": "!", "type": "stdio", "server_parameters": {"command": "x"}}
    empty = {"name": "!", "type": "stdio", "server_parameters": {"command": "x", "args": [], "env": None}}
    assert resolve_bundle_id(bare) == resolve_bundle_id(empty)


@pytest.mark.parametrize(
    "value, rule",
    [("a.b", "A-Z a-z 0-9 _ -"), ("a__b", "'__'"), ("", "non-empty"), ("héllo", "A-Z a-z 0-9 _ -"), (7, "non-empty")],
)
def test_explicit_bundle_ids_breaking_a_rule_are_refused_naming_it(value, rule):
    with pytest.raises(InvalidBundleId, match=rule):
        resolve_bundle_id({"name": "ok", "bundle_id": value, "type": "stdio", "server_parameters": {"command": "x"}})


def test_valid_explicit_bundle_ids_are_kept_as_written():
    assert check_bundle_id("My-Tools_2") == "My-Tools_2"


def test_exposed_name_prefixes_the_tool_part_with_the_bundle_id():
    assert exposed_tool_name("files", "read__raw") == "files__read__raw"
