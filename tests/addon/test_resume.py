"""Bake from Current Frame (quadric.bake_resume): a cancelled run continued from a kept snapshot bakes what the
uninterrupted run bakes, bit for bit; frames before the current one keep their keys; and it refuses, saying
why, when there is nothing to continue."""
import pytest


@pytest.fixture(scope="module")
def resumed(scenario):
    return scenario("bake_resume")


def keys_before(dump, frame):
    return {name: [pair for pair in zip(*keys) if pair[0] < frame] for name, keys in dump.items()}


def test_a_resumed_bake_is_the_uninterrupted_bake(resumed):
    assert resumed["whole"] == ["FINISHED"] and resumed["resume"] == ["FINISHED"]
    assert resumed["partial_state"] == "CANCELLED" and resumed["partial_end"] == 15  # frames 1-15 kept
    assert resumed["kept_frames"] == 15 and resumed["kept_snapshots"][0] == 0
    # frame 10 is frame index 9: it continues from the last snapshot at or before it (every frame's, unless
    # copying them took long), the frames before that come from the kept run
    assert resumed["resumed_from"] == max(k for k in resumed["kept_snapshots"] if k <= 9)
    assert resumed["resumed_frames"] == 40
    assert resumed["resumed_keys"] == resumed["whole_keys"]
    assert resumed["partial_end_after"] == 0  # whole now


def test_keys_before_the_current_frame_are_kept(resumed):
    assert keys_before(resumed["resumed_keys"], 10) == keys_before(resumed["partial_keys"], 10)


def test_it_refuses_when_there_is_nothing_to_continue(resumed):
    assert "no run of this scene is kept" in resumed["no_run_error"]
    assert "the kept run covers frames 1-15 of the range 1-40" in resumed["beyond_error"]
    assert "a body, collider, rope or setting changed since the run it would continue" in resumed["changed_error"]
    assert resumed["keys_after_refusals"] == resumed["partial_keys"]  # a refusal changes nothing


def test_the_kept_run_goes_with_the_scene_not_with_its_name(resumed):
    assert resumed["renamed_kept"] and resumed["resume"] == ["FINISHED"]  # continued after a rename
    first_name, newcomer, newcomer_has_none, still_kept = resumed["newcomer"]
    assert newcomer == first_name and newcomer_has_none and still_kept


def test_a_copy_of_the_scene_has_no_run_until_it_keeps_its_own(resumed):
    shares_the_id, copy_has_none, original_kept = resumed["copy"]
    assert shares_the_id and copy_has_none and original_kept
    assert resumed["renamed_after_copy"] == [True, True]  # the original renamed after the copy was made
    assert resumed["copy_kept"] == [True, True, True]  # the copy's run gave it an id of its own
    on_copy, cleared, copy_none, original_kept, reports = resumed["copy_cleared"]  # Clear Bake in the copy
    assert on_copy and cleared == ["FINISHED"] and copy_none and original_kept
    assert "dropped the kept run" in "\n".join(reports)
    assert resumed["runs_left"] == 1  # a deleted scene's run is not kept


@pytest.fixture(scope="module")
def saved(scenario):
    return scenario("bake_resume_saved")


def test_a_run_kept_beside_the_saved_file_resumes_in_a_new_session(saved):
    assert saved["whole"] == ["FINISHED"] and saved["resume"] == ["FINISHED"]
    assert saved["available"] == [True, True]  # the panel offers it, though nothing is in memory
    assert not saved["whole_unsaved"]  # a run goes to disk when the file is saved
    inside, files = saved["whole_folder"]
    assert inside and "run.json" in files and sum(f.startswith("snapshot-") for f in files) >= 2
    # read from disk: the snapshot in the worker, the 9 frames before it from the kept recording
    assert saved["from_disk"] == ["StoredSnapshot", 9, 40]
    assert saved["resumed_keys"] == saved["whole_keys"]  # bit for bit the uninterrupted run
    assert saved["files_after_save"] == saved["partial_files"]  # saving again did not write it again


def test_a_file_saved_under_another_name_takes_its_kept_run_along(saved):
    assert saved["copied"] == [True, True]
    assert saved["copy_resume"] == ["FINISHED"] and saved["copy_keys"] == saved["whole_keys"]


def test_clear_bake_deletes_the_kept_run_on_disk(saved):
    folder_left, cache_left, reports = saved["clear"]
    assert not folder_left and not cache_left
    assert any("dropped the kept run of frames 1-40" in line for line in reports), reports


def test_a_damaged_kept_run_is_refused_naming_the_file_and_bakes_nothing(saved):
    error, status = saved["damaged_snapshot"]
    assert "the kept run's file" in error and "snapshot-9-" in error and "cannot be read" in error, error
    assert saved["damaged_snapshot_keys"]
    assert "the kept run in '" in saved["damaged_run"] and "quadric_cache" in saved["damaged_run"]
    assert "cannot be read (JSONDecodeError" in saved["damaged_run"] and "Simulate again" in saved["damaged_run"]
    assert saved["damaged_run_keys"]


def test_a_run_kept_before_the_first_save_is_written_when_the_file_is_saved(saved):
    unsaved_folder, kept, inside, files = saved["saved_later"]
    assert unsaved_folder is None and kept and inside
    assert "run.json" in files and any(f.startswith("recording-") for f in files)


def test_a_deleted_scenes_run_is_deleted_when_the_file_is_saved(saved):
    # both runs beside the file, then the copy's scene deleted and the file saved: its run gone, the other's kept
    assert saved["deleted_scene"] == [True, True, True, False, True, True]
