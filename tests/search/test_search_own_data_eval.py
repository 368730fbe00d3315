"""``agentgym eval`` on a user's question file (issue 36): one command evaluates a served model
(a fake OpenAI-compatible server here), the recording names the file and its digest, and a
replay refuses the file once it has changed."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from agentgym import trajectory
from agentgym.cli import main
from tests.fake_openai import FakeOpenAI

DATA = Path(__file__).resolve().parent.parent / "data"
ENV = "agentgym/SearchQA-v0"


def _answer_bergen(body: dict) -> dict:
    return {"role": "assistant", "content": "<answer>Bergen</answer>"}


def test_eval_on_a_question_file_is_recorded_with_its_digest_and_replay_refuses_another(
    tmp_path, capsys
):
    questions = tmp_path / "musique_dev.jsonl"
    shutil.copy(DATA / "musique_sample.jsonl", questions)
    digest = hashlib.sha256(questions.read_bytes()).hexdigest()
    rec, out = tmp_path / "eval.agtr", tmp_path / "eval.jsonl"
    with FakeOpenAI(reply=_answer_bergen) as server:
        code = main(
            [
                "eval", ENV, "--policy", "openai", "--base-url", server.url, "--model", "m",
                "--env-kwargs", json.dumps({"questions": str(questions)}),
                "--episodes", "4", "--num-envs", "2", "--no-progress",
                "--record", str(rec), "--out", str(out),
            ]
        )  # fmt: skip
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4
    for row in rows:  # the 2-hop question's answer is Bergen, the 3-hop one's is not
        assert row["success"] is (row["task_id"] == "2hop__104731_20311"), row
    assert {r["task_id"] for r in rows} <= {"2hop__104731_20311", "3hop1__55012_20311_7731"}

    with trajectory.open(rec) as reader:
        episodes = list(reader.episodes())
    assert len(episodes) == 4
    for ep in episodes:
        assert ep.start["env_kwargs"] == {
            "questions": str(questions),
            "questions_sha256": digest,
            "split": "test",
        }
        data = ep.start["info"]["data"]
        assert data["questions"] == str(questions) and data["questions_sha256"] == digest
        assert data["questions_format"] == "musique" and data["questions_skipped"] == {
            "unanswerable": 1
        }

    assert main(["replay", str(rec)]) == 0  # the same file: every episode replays
    capsys.readouterr()
    questions.write_text(questions.read_text(encoding="utf-8").replace("Bergen", "Bergen city"))
    assert main(["replay", str(rec)]) != 0
    report = capsys.readouterr().out
    assert report.count("different file") == 4, report
    assert f"questions_sha256='{digest}'" in report


def test_run_record_on_a_question_file_pins_its_digest_and_replay_refuses_another(tmp_path, capsys):
    """``agentgym run --record`` names the user's file by digest as ``eval`` does, so a replay
    against an edited file is refused instead of being scored as the same data."""
    questions = tmp_path / "musique_dev.jsonl"
    shutil.copy(DATA / "musique_sample.jsonl", questions)
    digest = hashlib.sha256(questions.read_bytes()).hexdigest()
    rec = tmp_path / "run.agtr"
    code = main(
        [
            "run", ENV, "--policy", "oracle", "--episodes", "2", "--num-envs", "1",
            "--env-kwargs", json.dumps({"questions": str(questions)}), "--split", "test",
            "--record", str(rec),
        ]
    )  # fmt: skip
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    assert "success=100%" in stdout, stdout
    with trajectory.open(rec) as reader:
        starts = [ep.start for ep in reader.episodes()]
    assert len(starts) == 2
    for start in starts:
        assert start["env_kwargs"]["questions_sha256"] == digest, start["env_kwargs"]
    assert main(["replay", str(rec)]) == 0
    capsys.readouterr()
    questions.write_text(questions.read_text(encoding="utf-8").replace("Bergen", "Bergen city"))
    assert main(["replay", str(rec)]) != 0
    assert capsys.readouterr().out.count("different file") == 2
