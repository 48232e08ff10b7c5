"""The SKILL channel's rules without a network: the name lexer (skill.md §1.4, the spec's
examples), SKILL.md front matter, MIME types (§6.4) and the package sandbox (§9.2)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from smcp_sync.computer.channels.skill_files import FrontMatterError, parse_front_matter, skill_resource, split_skill_md
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.protocol.skill_mime import is_text_mime, mime_type_of
from smcp_sync.protocol.skill_name import check_skill_name


@pytest.mark.parametrize(
    "name",
    ["my-helper", "acme-audit:audit", "mcp:tfrobot-tools:code-review", "mcp:my_api:csv-aggregator",
     "mcp:bundle_a1b2c3d4e5f60718:summarize", "mcp:skill", "a" * 64],
)
def test_the_lexer_accepts_the_specs_names(name: str) -> None:
    assert check_skill_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["bad name!!", "", "a:b:c", "a:b:c:d", "mcp:a__b:c", "mcp:a.b:c", "mcp::c", "-x", "x-", "a--b", "Upper",
     "a" * 65, "mcp:ok:Bad", 42, None],
)
def test_the_lexer_refuses_everything_else_with_4016(name: object) -> None:
    with pytest.raises(SMCPError) as caught:
        check_skill_name(name)
    assert caught.value.code == 4016 and "name" in caught.value.details


def test_front_matter_fields_and_the_body_after_it() -> None:
    text = (
        "---\nname: code-review  # trailing comment\ndescription: >-\n  Reviews: code\n  and style\n"
        "allowed-tools:\n  - Read\n  - Grep\nnotes: |\n  line one\n  line two\n"
        "metadata:\n  author: me\n  since: 2024-01-02\n  nested: {deep: [1, 2]}\n# a comment\n---\n# Body\r\nkept as is\n"
    )
    block, body = split_skill_md(text)
    assert parse_front_matter(block) == {
        "name": "code-review", "description": "Reviews: code and style", "allowed-tools": ["Read", "Grep"],
        "notes": "line one\nline two\n", "metadata": {"author": "me", "since": "2024-01-02", "nested": {"deep": [1, 2]}},
    }
    assert body == "# Body\r\nkept as is\n"
    assert split_skill_md("no front matter\n") == (None, "no front matter\n")
    assert split_skill_md("---\nname: x\nnever closed\n") == (None, "---\nname: x\nnever closed\n")


@pytest.mark.parametrize(
    ("block", "why"),
    [("name: x\nodd line\n", "not valid YAML"), ("name: [unclosed\n", "not valid YAML"),
     ("- a list\n", "not a mapping"),
     ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                                                     for p, c in zip("abcdefgh", "bcdefghi")), "more than 10000")],
)
def test_bad_front_matter_is_refused_with_its_reason(block: str, why: str) -> None:
    with pytest.raises(FrontMatterError, match=why):
        parse_front_matter(block)


@pytest.mark.parametrize(
    ("path", "mime", "text"),
    [("a.md", "text/markdown", True), ("b.YAML", "application/yaml", True), ("c.toml", "application/toml", True),
     ("d.json", "application/json", True), ("e.svg", "image/svg+xml", True), ("f.png", "image/png", False),
     ("g", "application/octet-stream", False), ("h.rst", "text/x-rst", True)],
)
def test_mime_types_come_from_the_fixed_table(path: str, mime: str, text: bool) -> None:
    assert mime_type_of(path) == mime and is_text_mime(mime) is text
    assert is_text_mime("application/vnd.acme+json; charset=utf-8")


def test_the_sandbox_checks_traversal_before_forbidden_before_not_found(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: pkg\n---\nbody\n", encoding="utf-8")
    (root / "sub" / "data.bin").write_bytes(b"\1\2\3")
    (tmp_path / "outside.txt").write_text("secret", encoding="utf-8")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    os.symlink(root / "sub" / "data.bin", root / "inner-link.bin")  # a link that stays inside is fine
    cases = {"../outside.txt": "traversal", "link.txt": "traversal", "sub/../../outside.txt": "traversal",
             "..\\outside.txt": "traversal", ".skillenv": "forbidden", "sub/.skillenv/x": "forbidden",
             "sub/none.md": "not_found", "sub": "not_found"}
    for rel_path, reason in cases.items():
        with pytest.raises(SMCPError) as caught:
            skill_resource(root, rel_path, 1 << 20)
        assert (caught.value.code, caught.value.details["reason"]) == (4017, reason), rel_path
    entry = skill_resource(root, "SKILL.md", 1 << 20)
    assert (entry.total_size, entry.read(0, 100)) == (5, b"body\n")
    inner = skill_resource(root, "inner-link.bin", 1 << 20)
    assert (inner.sha256, inner.read(1, 5)) == (hashlib.sha256(b"\1\2\3").hexdigest(), b"\2\3")
    (root / "sub" / "data.bin").unlink()
    with pytest.raises(OSError):  # a blob handle's later read runs the sandbox again
        inner.read(0, 3)


SECRET = b"OPENAI_API_KEY=sk-live-not-for-agents\n"


def secret_package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: pkg\n---\nbody\n", encoding="utf-8")
    (root / ".skillenv").write_bytes(SECRET)
    (root / "sub" / ".SkillEnv").write_bytes(SECRET)
    (root / "notes.txt").write_bytes(b"plain notes\n")
    return root


@pytest.mark.parametrize(
    "rel_path",
    [".SKILLENV", ".SkillEnv", "sub/.SkillEnv", "sub/.skillenv", "./.skillenv", "sub/../.skillenv", ".skillenv/"],
)
def test_a_secret_file_is_forbidden_whatever_its_case_or_spelling(tmp_path: Path, rel_path: str) -> None:
    root = secret_package(tmp_path)
    with pytest.raises(SMCPError) as caught:
        skill_resource(root, rel_path, 1 << 20)
    assert (caught.value.code, caught.value.details["reason"]) in {(4017, "forbidden"), (4017, "traversal")}
    assert caught.value.details["reason"] == ("traversal" if ".." in rel_path else "forbidden")


def test_links_to_a_secret_file_are_forbidden(tmp_path: Path) -> None:
    root = secret_package(tmp_path)
    os.symlink(root / ".skillenv", root / "soft.txt")
    os.link(root / ".skillenv", root / "hard.txt")
    os.link(root / "sub" / ".SkillEnv", root / "sub" / "hard.txt")
    for rel_path in ("soft.txt", "hard.txt", "sub/hard.txt"):
        with pytest.raises(SMCPError) as caught:
            skill_resource(root, rel_path, 1 << 20)
        assert (caught.value.code, caught.value.details["reason"]) == (4017, "forbidden"), rel_path


def test_a_link_swapped_in_after_the_check_reads_nothing(tmp_path: Path) -> None:
    """A blob handle minted for a plain file, which is then replaced by a link to the
    secret (or its folder by a link to a folder holding one): later reads fail."""
    root = secret_package(tmp_path)
    entry = skill_resource(root, "notes.txt", 1 << 20)
    assert entry.read(0, 100) == b"plain notes\n"
    (root / "notes.txt").unlink()
    os.symlink(root / ".skillenv", root / "notes.txt")
    with pytest.raises(OSError):
        entry.read(0, 100)
    (root / "deep").mkdir()
    (root / "deep" / "notes.txt").write_bytes(b"deep notes\n")
    deep = skill_resource(root, "deep/notes.txt", 1 << 20)
    (root / "deep" / "notes.txt").unlink()
    (root / "deep").rmdir()
    os.symlink(root / "sub", root / "deep")  # sub/notes.txt does not exist; a link to a folder opens nothing
    (root / "sub" / "notes.txt").symlink_to(root / "sub" / ".SkillEnv")
    with pytest.raises(OSError):
        deep.read(0, 100)


def test_skill_md_by_any_spelling_comes_without_its_front_matter(tmp_path: Path) -> None:
    root = secret_package(tmp_path)
    for rel_path in ("./SKILL.md", "SKILL.md/", "SKILL.md"):
        entry = skill_resource(root, rel_path, 1 << 20)
        assert (entry.mime_type, entry.total_size, entry.read(0, 100)) == ("text/markdown", 5, b"body\n"), rel_path
    os.symlink(root / "SKILL.md", root / "alias.md")  # a link to it inside the package: the same file
    assert skill_resource(root, "alias.md", 1 << 20).read(0, 100) == b"body\n"
