"""The wheel ships prompts/, guidelines/, targets/ and data/, and the package finds them there."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return next(out.glob("mindeval-*.whl"))


def test_wheel_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("mindeval/_bundled/guidelines/guidelines.yaml", "mindeval/_bundled/prompts/judge/default.txt",
              "mindeval/_bundled/prompts/clinician/default.txt", "mindeval/_bundled/data/demo_profiles.jsonl",
              "mindeval/_bundled/targets/mindeval/target.yaml",
              "mindeval/cli/meta.py", "annotation_app/app.py", "annotation_app/store/migrations/env.py",
              "annotation_app/store/migrations/versions/0001_initial.py",
              "mindeval/store/migrations.py"):
        assert f in names, f
    entry = [n for n in names if n.endswith("entry_points.txt")][0]
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "mindeval = mindeval.cli:main" in text and "metaeval = mindeval.cli.meta:main" in text


def test_installed_layout_finds_bundled_files(wheel, tmp_path):
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    code = ("from mindeval.prompts import load_template; from mindeval.targets.guidelines import load_guidelines;"
            "from mindeval.resources import prompts_dir; print(prompts_dir());"
            "print(load_template('judge/default').ref, load_guidelines().version);"
            "from mindeval.targets import load_target, validate_target; t = load_target();"
            "print(t.root, t.template('judge').ref, validate_target('mindeval'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert str(tmp_path / "site" / "mindeval" / "_bundled" / "prompts") in r.stdout
    assert f"{tmp_path / 'site' / 'mindeval' / '_bundled' / 'targets' / 'mindeval'} judge/default@v2 []" in r.stdout


def test_installed_layout_migrates_both_databases(wheel, tmp_path):
    """Alembic finds the app's migrations inside the installed package (no alembic.ini, no source tree)."""
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    code = ("from mindeval.store.db import Database, sqlite_url; from mindeval.store.migrations import current_version;"
            "from annotation_app.store.migrations import upgrade, current_revision, head_revision;"
            "import annotation_app.store.migrations as m; print(m.HERE);"
            "db = Database(sqlite_url('run.db')); print('run', current_version(db.engine));"
            "app = Database(sqlite_url('app.db'), create=False); upgrade(app.engine);"
            "print('app', current_revision(app.engine) == head_revision())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert str(tmp_path / "site" / "annotation_app" / "store" / "migrations") in r.stdout
    assert "app True" in r.stdout and "run " in r.stdout
