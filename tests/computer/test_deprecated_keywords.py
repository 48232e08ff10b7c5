"""`Computer`'s flat keywords of before its value objects (issue 35): kept one release,
each group warns naming the new spelling and gives the Computer what its value object
gives; mixed with that value object it is refused naming both."""

from __future__ import annotations

from pathlib import Path

import pytest

from smcp_sync import Computer
from smcp_sync.computer import BlobOptions, ChannelOptions, Inputs, SkillsOptions

DEFINITION = {"id": "region", "type": "promptString", "description": "where", "default": "eu"}


def built(**keywords) -> Computer:
    return Computer("c", **keywords)  # never started: nothing to close


def messages(warned) -> list[str]:
    return sorted(str(w.message).split("; ")[1] for w in warned)


def test_the_input_keywords_warn_and_give_the_same_inputs():
    with pytest.warns(DeprecationWarning) as warned:
        old = built(inputs=[DEFINITION], input_values={"region": "us"})
    assert messages(warned) == ["use Computer(inputs=Inputs(definitions=...))", "use Computer(inputs=Inputs(values=...))"]
    assert warned[0].filename == __file__
    new = built(inputs=Inputs([DEFINITION], values={"region": "us"}))
    assert old.get_config().inputs == new.get_config().inputs != []
    assert old._manager.inputs.value("region") == new._manager.inputs.value("region") == "us"


def test_the_channel_keywords_warn_and_give_the_same_channels():
    with pytest.warns(DeprecationWarning, match=r"use Computer\(channels=ChannelOptions\(history_size=\.\.\.\)\)"):
        old = built(history_size=3)
    new = built(channels=ChannelOptions(history_size=3))
    assert old._history._records.maxlen == new._history._records.maxlen == 3


def test_the_skill_keywords_warn_and_give_the_same_skills(tmp_path: Path):
    with pytest.warns(DeprecationWarning) as warned:
        old = built(skill_home=tmp_path, skill_inline_budget=100)
    assert messages(warned) == [
        "use Computer(skills=SkillsOptions(home=...))",
        "use Computer(skills=SkillsOptions(inline_budget=...))",
    ]
    new = built(skills=SkillsOptions(home=tmp_path, inline_budget=100))
    assert old.skill_inline_budget == new.skill_inline_budget == 100
    assert old._skill_home._given == new._skill_home._given == tmp_path.resolve()


def test_the_blob_keywords_warn_and_give_the_same_blobs():
    with pytest.warns(DeprecationWarning, match=r"use Computer\(blobs=BlobOptions\(handle_ttl=\.\.\.\)\)"):
        old = built(blob_handle_ttl=7.0)
    new = built(blobs=BlobOptions(handle_ttl=7.0))
    assert old.blobs._ttl == new.blobs._ttl == 7.0


def test_an_alias_with_its_value_object_is_refused_naming_both():
    with pytest.raises(TypeError, match=r"got blobs= and landing_folder=: give landing_folder inside BlobOptions"):
        built(blobs=BlobOptions(), landing_folder="/tmp")
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'landing_folders'"):
        built(landing_folders="/tmp")


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: BlobOptions(handle_ttl=0), "handle_ttl must be a number > 0"),
        (lambda: BlobOptions(upload_max_bytes=-1), "upload_max_bytes must be a number > 0"),
        (lambda: SkillsOptions(max_size=-1), "max_size must be an integer >= 0"),
        (lambda: ChannelOptions(update_debounce=-0.1), "update_debounce must be a number >= 0"),
    ],
)
def test_each_value_object_refuses_a_bad_value_when_built(build, message):
    with pytest.raises(ValueError, match=message):
        build()
