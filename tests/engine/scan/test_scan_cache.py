"""The scan's answer remembered per provider folder (``engine/scan/cache.py``): the
same answer as the scan, recomputed whenever anything it reads changes."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from dreamlake.engine.contract.result import Blocking
from dreamlake.engine.scan import cache
from dreamlake.engine.scan.result import scan
from dreamlake.engine.scan.terraform import scan_terraform
from dreamlake.engine.settings import usercache
from dreamlake.engine.world.paths import ProviderPaths
from dreamlake.engine.world.vendors import Decision, Template, get_template

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
GOOD = 'workdir = "/srv/nymph"\nqueues = ["default"]\nworker_name = "box-1"\n'


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", str(d))
    return d / "scan"


@pytest.fixture
def paths(tmp_path: Path) -> ProviderPaths:
    d = tmp_path / ".dream" / "providers" / "demo"
    shutil.copytree(TEMPLATES / "local", d, ignore=shutil.ignore_patterns("TEMPLATE.json"))
    return ProviderPaths(d)


class Counting:
    def __init__(self, paths: ProviderPaths, template: Template) -> None:
        self.paths, self.template, self.calls = paths, template, 0

    def __call__(self) -> list[Blocking]:
        self.calls += 1
        return scan_terraform(self.paths, self.template)


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usercache, "RACY_SECONDS", 0.0)


def test_a_hit_is_the_scan_answer_without_scanning(
    paths: ProviderPaths, cache_dir: Path, no_racy_window: None
) -> None:
    template = get_template("local")
    compute = Counting(paths, template)
    first = cache.remembered(paths, template, compute)
    assert [b.key for b in first] == ["workdir", "queues", "worker_name"]
    again = cache.remembered(paths, template, compute)
    assert compute.calls == 1
    assert again == first == scan_terraform(paths, template)
    assert [b.model_dump() for b in again] == [b.model_dump() for b in first]
    (entry,) = cache_dir.iterdir()
    assert json.loads(entry.read_text())["key"].startswith(f"{paths.dir.absolute()}\0")


def test_any_change_to_what_the_scan_reads_is_a_miss(
    paths: ProviderPaths, cache_dir: Path, no_racy_window: None
) -> None:
    template = get_template("local")
    compute = Counting(paths, template)
    tfvars = paths.terraform / "terraform.tfvars"
    cache.remembered(paths, template, compute)

    tfvars.write_text(GOOD)  # the values
    assert cache.remembered(paths, template, compute) == []
    assert compute.calls == 2

    same_size = GOOD.replace("box-1", "box-2")  # same size, same second
    tfvars.write_text(same_size)
    assert cache.remembered(paths, template, compute) == []
    assert compute.calls == 3

    auto = paths.terraform / "x.auto.tfvars"  # a file Terraform also loads
    auto.write_text('worker_name = "other"\n')
    got = cache.remembered(paths, template, compute)
    assert compute.calls == 4 and [b.reason for b in got] == ["conflict"]

    variables = paths.terraform / "variables.tf"  # the declarations that judge values
    variables.write_text(variables.read_text() + "\n")
    cache.remembered(paths, template, compute)
    assert compute.calls == 5

    fewer = Template(**{**template.__dict__, "decisions": template.decisions[:1]})
    cache.remembered(paths, fewer, Counting(paths, fewer))  # other decisions: a miss
    assert [b.key for b in cache.remembered(paths, template, compute)] == ["worker_name"]
    assert compute.calls == 6


def test_an_answer_is_remembered_right_after_an_edit_by_the_files_text(
    paths: ProviderPaths, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = get_template("local")
    compute = Counting(paths, template)
    tfvars = paths.terraform / "terraform.tfvars"
    tfvars.write_text(GOOD)
    cache.remembered(paths, template, compute)
    assert cache.remembered(paths, template, compute) == []
    assert compute.calls == 1  # the second run, within the racy window, found it
    # A rewrite of the same size within one tick of a coarse clock (inode and
    # times as they were: the listing says so) is still a miss: the text's hash moved.
    listing = usercache.listing

    def coarse(folder: Path) -> list[list[object]] | None:
        return [[e[0], e[1], 1, 0, 0] for e in listing(folder) or []]

    monkeypatch.setattr(usercache, "listing", coarse)
    cache.remembered(paths, template, compute)
    assert compute.calls == 2  # the listing changed: computed, and kept
    tfvars.write_text(GOOD.replace("box-1", "box-2"))
    cache.remembered(paths, template, compute)
    assert compute.calls == 3
    cache.remembered(paths, template, compute)
    assert compute.calls == 3


def test_a_file_too_large_to_hash_is_not_remembered_while_fresh(
    paths: ProviderPaths, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "CONTENT_LIMIT", 0)
    template = get_template("local")
    compute = Counting(paths, template)
    (paths.terraform / "terraform.tfvars").write_text(GOOD)
    cache.remembered(paths, template, compute)
    cache.remembered(paths, template, compute)
    assert compute.calls == 2 and not cache_dir.exists()

    past = time.time() - 3600
    for f in paths.terraform.iterdir():
        os.utime(f, (past, past))
    fp = cache.fingerprint(paths, template) or {}
    assert not usercache.settled([s for v in fp["files"].values() for s in v])  # ctime: now


def test_off_broken_entries_and_failing_scans(
    paths: ProviderPaths, cache_dir: Path, no_racy_window: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = get_template("local")
    compute = Counting(paths, template)
    cache.remembered(paths, template, compute)
    (entry,) = cache_dir.iterdir()
    entry.write_text("{not json")
    assert len(cache.remembered(paths, template, compute)) == 3
    assert compute.calls == 2 and json.loads(entry.read_text())["value"]

    def boom() -> list[Blocking]:
        raise ValueError("does not parse")

    (paths.terraform / "terraform.tfvars").write_text(GOOD)
    with pytest.raises(ValueError):
        cache.remembered(paths, template, boom)
    assert len(json.loads(entry.read_text())["value"]) == 3  # the old answer, unused

    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", "off")
    shutil.rmtree(cache_dir)
    assert cache.remembered(paths, template, compute) == []
    assert compute.calls == 3 and not cache_dir.exists()


def test_the_scan_uses_it_and_probes_still_fill_observed(
    paths: ProviderPaths, cache_dir: Path, no_racy_window: None
) -> None:
    template = get_template("local")
    first = scan(paths, template, "terraform")
    assert [e.name for e in cache_dir.iterdir()]
    assert scan(paths, template, "terraform") == first
    probed = Template(
        **{
            **template.__dict__,
            "decisions": (
                Decision(
                    key="workdir", var="workdir", file="terraform/terraform.tfvars", probe="x"
                ),
            ),
        }
    )
    assert scan(paths, probed, "terraform", probe=False).degraded == ("no-probe",)


def test_two_installed_engines_keep_an_answer_each(
    paths: ProviderPaths, cache_dir: Path, no_racy_window: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = get_template("local")
    compute = Counting(paths, template)
    here = cache._CODE
    cache.remembered(paths, template, compute)
    monkeypatch.setattr(cache, "_CODE", here.parent / "elsewhere")  # another install
    cache.remembered(paths, template, compute)
    cache.remembered(paths, template, compute)
    monkeypatch.setattr(cache, "_CODE", here)
    cache.remembered(paths, template, compute)
    assert compute.calls == 2 and len(list(cache_dir.iterdir())) == 2


def test_what_plan_and_apply_write_beside_the_variables_is_not_read(
    paths: ProviderPaths,
) -> None:
    """A plan in an agent's loop rewrites its saved plan and records on every run; the
    scan reads none of them, so its remembered answer stays."""
    template = get_template("local")
    before = cache.fingerprint(paths, template)
    tf = paths.dir / "terraform"
    for name in sorted(cache.RUN_ARTIFACTS):
        (tf / name).write_text("{}\n")
    (tf / "early-4242.tfplan").write_text("a plan started ahead, by its process\n")
    assert cache.fingerprint(paths, template) == before
    (tf / "extra.auto.tfvars").write_text('queues = ["gpu"]\n')
    assert cache.fingerprint(paths, template) != before
