"""The wire version and its compatibility rule (spec-0.3/versioning.md)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from smcp_sync.protocol.errors import BadRequestError, VersionMismatchError
from smcp_sync.protocol.versioning import (
    PROTOCOL_VERSION,
    ProtocolVersion,
    handshake_refusal,
    handshake_url,
    is_compatible,
    mismatch_body,
    refusal_error,
)

V = ProtocolVersion.parse


def test_we_speak_what_a2c_smcp_042_sends():
    assert PROTOCOL_VERSION == "0.4.0"


# The spec's own test table ("测试建议"), client against server.
@pytest.mark.parametrize(
    "client, server, compatible",
    [
        ("0.2.0", "0.2.0", True),
        ("0.2.1", "0.2.0", True),
        ("0.2.0", "0.3.0", False),
        ("0.3.0", "0.2.0", False),
        ("1.0.0", "0.2.0", False),
        ("1.0.0", "1.2.0", True),
        ("1.2.0", "1.0.0", False),
        ("2.0.0", "1.9.0", False),
    ],
)
def test_compatibility_rule_of_the_spec(client, server, compatible):
    assert is_compatible(V(client), V(server)) is compatible


@pytest.mark.parametrize("text", ["abc", "0.4", "0.4.0.1", "", " 0.4.0", "0.4.x", "٠.4.0", "-1.4.0", "0.4.0+build", None, 40])
def test_parse_refuses_what_is_not_a_version(text):
    with pytest.raises(ValueError):
        V(text)


def test_a_prerelease_suffix_is_ignored():
    assert V("0.4.0-dev") == V("0.4.0")


def test_supported_range_in_the_4008_body():
    assert mismatch_body("0.5.0") == {
        "code": 4008,
        "message": "Protocol version mismatch",
        "server_version": "0.4.0",
        "client_version": "0.5.0",
        "min_supported": "0.4.0",
        "max_supported": "0.4.999",
    }
    assert mismatch_body("2.0.0", V("1.3.2"))["min_supported"] == "1.0.0"
    assert mismatch_body("2.0.0", V("1.3.2"))["max_supported"] == "1.3.999"


class TestHandshakeRefusal:
    def test_compatible_passes(self):
        assert handshake_refusal(["0.4.7"], require=True) is None

    def test_missing_passes_unless_required(self):
        assert handshake_refusal([], require=False) is None
        assert handshake_refusal([], require=True) == {"code": 400, "message": "Missing a2c_version query parameter"}

    def test_incompatible_is_4008(self):
        assert handshake_refusal(["0.3.0"], require=False) == mismatch_body("0.3.0")

    @pytest.mark.parametrize("values, says", [(["abc"], "Invalid a2c_version"), ([""], "Invalid"), (["0.4.0", "0.4.0"], "given 2 times")])
    def test_malformed_is_400_saying_why(self, values, says):
        refusal = handshake_refusal(values, require=False)
        assert refusal["code"] == 400 and says in refusal["message"]

    def test_a_huge_value_is_quoted_cut_short(self):
        refusal = handshake_refusal(["9" * 100_000], require=False)
        assert refusal["code"] == 400 and len(refusal["message"]) < 200


class TestClientSide:
    def test_handshake_url_adds_our_version_and_keeps_the_rest(self):
        url = handshake_url("http://h:1/?tenant=a&a2c_version=9.9.9", [("x", "1,2")])
        query = parse_qs(urlsplit(url).query)
        assert query == {"tenant": ["a"], "a2c_version": [PROTOCOL_VERSION], "x": ["1,2"]}
        assert urlsplit(url).netloc == "h:1"

    def test_a_4008_body_becomes_a_typed_error_naming_both_versions(self):
        error = refusal_error(mismatch_body("0.4.0", V("0.5.1")), "http://h:1")
        assert isinstance(error, VersionMismatchError) and error.code == 4008
        assert "0.4.0" in str(error) and "0.5.1" in str(error) and "http://h:1" in str(error)
        assert (error.server_version, error.client_version, error.min_supported, error.max_supported) == (
            "0.5.1",
            "0.4.0",
            "0.5.0",
            "0.5.999",
        )

    def test_a_400_body_becomes_a_bad_request(self):
        error = refusal_error({"code": 400, "message": "Missing a2c_version query parameter"}, "http://h:1")
        assert isinstance(error, BadRequestError) and "Missing a2c_version" in error.message

    @pytest.mark.parametrize("body", [None, "Bad Request", {"message": "Invalid connection request"}, {"code": 401, "message": "no"}])
    def test_other_bodies_are_not_handshake_refusals(self, body):
        assert refusal_error(body, "http://h:1") is None
