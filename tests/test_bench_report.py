"""The benchmark report (scripts/bench/report.py): each column once, the threading layer second; the commit it names."""
import subprocess

from scripts.bench import report


def header(rows):
    return [cell.strip() for cell in report._table(rows)[0].strip("|").split("|")]


def test_a_threading_layer_named_by_a_string_is_one_column_second():
    # few enough preferred columns that the other scalars are taken too, the layer among them (ui_stall's rows)
    rows = [dict(case="ui_stall", bodies=1000, frames=96, substeps=10, state="DONE", simulate_seconds=3.1,
                 threading_layer="omp", ticks=40, max_tick_ms=5.0)]
    keys = header(rows)
    assert keys.count("threading_layer") == 1 and keys[1] == "threading_layer"
    assert sorted(keys) == sorted(rows[0])  # every field once (nine, fewer than MAX_COLUMNS)


def test_a_threading_layer_given_as_a_dict_is_shown_second_with_its_tbb_version():
    rows = [dict(engine="ours", n=100, steps_per_s=50.0, threading_layer=dict(layer="tbb", tbb_version="2022"))]
    keys = header(rows)
    assert keys == ["engine", "threading_layer", "n", "steps_per_s"]
    assert "tbb_version 2022" in report._table(rows)[2]


def test_the_commit_is_marked_changed_by_code_but_not_by_the_reports_own_files(tmp_path):
    """A second record made before the first is committed measures the same code: only the files the report
    writes differ, and they leave the commit unmarked. Any other tracked change marks it."""
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    for name in ("docs/benchmarks.md", "docs/bench/shapes.jsonl", "docs/images/bench-shapes.png",
                 "quadric_solver/step.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("before\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    assert "uncommitted" not in report.commit(str(tmp_path))
    for name in ("docs/benchmarks.md", "docs/bench/shapes.jsonl", "docs/images/bench-shapes.png"):
        (tmp_path / name).write_text("after\n")
    assert "uncommitted" not in report.commit(str(tmp_path))
    (tmp_path / "quadric_solver/step.py").write_text("after\n")
    assert report.commit(str(tmp_path)).endswith("(with uncommitted changes)")
