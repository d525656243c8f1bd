"""`plan` (issue 14): after the full dataset preflight, the counts, what `--reuse` would copy (the lookups
of `tasks/reuse.py`) and the requests and prompt tokens the run would send, each next to its formula;
with prices, their cost (`cli.plan_cost`). No model request, no file written but the image cache and,
with `--write-manifest`, the dataset's `mobilemem-manifest.json` (`mobilemem.dataset_manifest`): the
run's request, configuration and dataset preflight (`run_plan.configured`, `.selected`,
`.revision_status`), but unlike `run_plan.preflight` nothing claims the run directory."""

from __future__ import annotations

import argparse
import math
import sys
import unicodedata
from pathlib import Path

from PIL import Image

import mobilemem_judge
from mobilemem import dataset_manifest, fingerprints, reuse
from mobilemem.candidates import plugin, prompt_hashes
from mobilemem.records import Config, DEFAULT_KIND, JudgeSettingsFile, RunRequest
from mobilemem.dataset import DATASET_REVISION, Dataset, ScheduledUser
from mobilemem.dataset_manifest import MANIFEST_FILE
from mobilemem.errors import ConfigError, DatasetError, describe
from mobilemem.images import SUPPORTED_FORMATS
from mobilemem.endpoints import Endpoint
from mobilemem.rundir import RunDir
from lifecycle import run_plan
from lifecycle.reuse_match import UserMatch, match_user
from lifecycle.provenance import candidate_provenance  # as run.json records it: fingerprints agree
from cli import plan_cost
from cli.arguments import CommandParser, positive, user_ids

OVERHEAD_TOKENS = 2_000  # per candidate request: system prompt, ReMe's instructions, tool schemas
RETRIEVED_TOKENS = 3_000  # per answer iteration: the memory it is assumed to read back
ANSWER_TOKENS = 200  # the answer assumed in a judge prompt
PATCH_PX = 28  # Qwen-VL: one image token per 28x28-pixel patch (14-pixel patches merged 2x2)
HEADER_FORMATS = [f for f in SUPPORTED_FORMATS if f != "MPO"]  # Pillow reads MPO with its JPEG parser


def text_tokens(text: str) -> int:
    """1 per CJK character (East Asian Width W or F), plus the other characters / 4, rounded up."""
    wide = sum(unicodedata.east_asian_width(ch) in ("W", "F") for ch in text)
    return wide + math.ceil((len(text) - wide) / 4)


def image_tokens(path: Path) -> int:
    """ceil(width/28) * ceil(height/28), from the header alone (preflight has decoded it in full)."""
    with Image.open(path, formats=HEADER_FORMATS) as img:  # an MPO's size is its first picture's, the one sent
        width, height = img.size
    return math.ceil(width / PATCH_PX) * math.ceil(height / PATCH_PX)


def cost(per_unit: int, fixed: int, units: list[int]) -> tuple[int, int]:
    """(requests, prompt tokens): `per_unit` requests per unit, each `fixed` + the unit's own tokens."""
    return per_unit * len(units), per_unit * (fixed * len(units) + sum(units))


def _reuse(args: argparse.Namespace, dataset: Dataset, config: Config,
           settings: JudgeSettingsFile) -> dict[int, UserMatch]:
    """Per user: the memory fingerprint `open_run` computes and what `tasks/reuse.py` would copy (copying nothing)."""
    provenance, frozen = candidate_provenance(config), prompt_hashes(config.candidate.kind)
    try:
        earlier = [reuse.EarlierRun.open(path) for path in args.reuse]
        return {user.user_id: match_user(
            earlier, user, fingerprints.memory_fingerprint(user, dataset.images_of(user), config.model,
                                                           config.candidate, provenance, frozen,
                                                           args.simulate),  # as in open_run
            config.candidate, dataset.judge_questions, settings) for user in dataset.users}
    except (OSError, ValueError) as exc:  # not a run directory, or a record that does not validate
        raise ConfigError(f"--reuse: {describe(exc)}") from None


def _judge_endpoint(config: Config, simulate: bool) -> tuple[Endpoint, str | None]:
    """The run's judge (`Endpoint.from_env` honours JUDGE_MODEL_NAME), else the configured one and a note."""
    try:
        if not simulate:
            Endpoint.from_env("candidate", config)
            return Endpoint.from_env("judge", config), None
    except ConfigError as exc:
        note = f"note: without --simulate the run would refuse to start: {exc}"
        return Endpoint.simulated("judge", config, "http://plan"), note
    return Endpoint.simulated("judge", config, "http://plan"), None


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="python flows/mobilemem.py plan",
                                     description="Preflight, then the size of the run: nothing is sent or written.")
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--output", type=Path, help="also say whether the run directory there is free")
    parser.add_argument("--users", type=user_ids, help="only these user ids, comma-separated")
    parser.add_argument("--limit-questions", type=positive)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--model", help="candidate model name (default from the configuration)")
    parser.add_argument("--simulate", action="store_true", help="plan a run against the simulator")
    parser.add_argument("--candidate", metavar="NAME", help="plan another candidate's run (see the main command)")
    parser.add_argument("--reuse", type=Path, action="append", default=[], metavar="RUN_DIR")
    parser.add_argument("--iterations-per-session", type=positive, default=3)
    parser.add_argument("--iterations-per-question", type=positive, default=6)
    parser.add_argument("--write-manifest", action="store_true",
                        help=f"write {MANIFEST_FILE} into the dataset folder: every release file's size and "
                             f"sha256, for the revision {DATASET_REVISION} (later runs verify the folder against it)")
    plan_cost.add_arguments(parser)
    return parser


def _row(label: str, counts: tuple[int, int], formula: str = "", sign: int = 1) -> str:
    return (f"  {label:<10}{sign * counts[0]:>9,} requests {sign * counts[1]:>13,} prompt tokens"
            f"{'  = ' + formula if formula else ''}")


def _plus(a: tuple[int, int], b: tuple[int, int], sign: int = 1) -> tuple[int, int]:
    return a[0] + sign * b[0], a[1] + sign * b[1]


def _answer_stage(reads: str, m: int, questions: list[int], history: list[int], context_size: int,
                  ) -> tuple[int, list[int], str]:
    """The answers' fixed tokens per request, each question's own tokens and the formula, by what the
    candidate's plug-in declares an answer request carries (`CandidatePlugin.answer_reads`)."""
    head = f"{m} iterations x ({len(questions):,} questions x ({OVERHEAD_TOKENS:,} overhead"
    if reads == "retrieved":
        return (OVERHEAD_TOKENS + RETRIEVED_TOKENS, questions,
                f"{head} + {RETRIEVED_TOKENS:,} retrieved) + {sum(questions):,} question tokens)")
    if reads == "nothing":
        return OVERHEAD_TOKENS, questions, f"{head}) + {sum(questions):,} question tokens)"
    kept = [min(h, context_size) for h in history]
    return (OVERHEAD_TOKENS, [q + h for q, h in zip(questions, kept, strict=True)],
            f"{head}) + {sum(questions):,} question tokens + {sum(kept):,} history tokens: each question's user's "
            f"transcript text and images, at most context_size {context_size:,})")


def _estimate_lines(dataset: Dataset, found: dict[int, UserMatch], rubric: str, k: int, m: int,
                    reads: str, context_size: int) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """Per stage (memory, answers, judge): its cost next to its formula, then the reused part of it;
    and per role (candidate, judge) the requests and prompt tokens still to send."""
    sessions = [(s, found[u.user_id].source is not None) for u in dataset.users for s in u.sessions]
    jobs = [(q, found[u.user_id]) for u in dataset.users for q in u.questions]
    text = [sum(text_tokens(t.text) for t in s.turns if t.text) for s, _ in sessions]
    images = [sum(image_tokens(dataset.path_of(t.image)) for t in s.turns if t.image) for s, _ in sessions]
    transcript = iter([a + b for a, b in zip(text, images, strict=True)])
    per_user = {u.user_id: sum(next(transcript) for _ in u.sessions) for u in dataset.users}
    questions = [text_tokens(q.question) for q, _ in jobs]
    fixed, answers, answer_formula = _answer_stage(
        reads, m, questions, [per_user[u.user_id] for u in dataset.users for _ in u.questions], context_size)
    filled = [text_tokens(mobilemem_judge.fill(rubric, dataset.judge_questions[q.question_id], "")) for q, _ in jobs]
    stages = [  # name, requests per unit, fixed tokens per request, each unit's own tokens, reused units, formula
        ("memory", k, OVERHEAD_TOKENS, [a + b for a, b in zip(text, images, strict=True)], [r for _, r in sessions],
         f"{k} iterations x ({len(sessions)} sessions x {OVERHEAD_TOKENS:,} overhead + {sum(text):,} transcript "
         f"text + {sum(images):,} image tokens)"),
        ("answers", m, fixed, answers, [q.question_id in r.answers for q, r in jobs], answer_formula),
        ("judge", 1, ANSWER_TOKENS, filled, [q.question_id in r.judgments for q, r in jobs],
         f"1 request x ({len(jobs)} questions x {ANSWER_TOKENS} assumed answer + {sum(filled):,} tokens of the "
         "rubric filled with question, references and evidence)")]
    lines = ["estimate, if every step succeeds (text tokens: 1 per CJK character + other characters / 4, rounded up;",
             f"  image tokens: ceil(width/{PATCH_PX}) x ceil(height/{PATCH_PX}) per image (Qwen-VL), uncapped):"]
    total, reused, sent = (0, 0), (0, 0), {"candidate": (0, 0), "judge": (0, 0)}
    for name, per_unit, fixed, units, copied, formula in stages:
        full, mine = cost(per_unit, fixed, units), cost(per_unit, fixed, [u for u, c in zip(units, copied) if c])
        lines += [_row(name, full, formula), _row("  reused", mine, sign=-1)]
        total, reused = _plus(total, full), _plus(reused, mine)
        role = "judge" if name == "judge" else "candidate"
        sent[role] = _plus(sent[role], _plus(full, mine, sign=-1))
    return [*lines, _row("all", total, f"{len(sessions)} sessions x {k} + {len(jobs)} questions x ({m} + 1 judge) "
                         "requests"), _row("reused", reused, sign=-1), _row("to send", _plus(total, reused, -1))], sent


def _count(head: str, users: list[ScheduledUser], dataset: Dataset) -> str:
    images = [dataset.path_of(t.image) for u in users for s in u.sessions for t in s.turns if t.image]
    return (f"{head}sessions {sum(len(u.sessions) for u in users)}, images {len(images)} "
            f"({sum(p.stat().st_size for p in images):,} bytes), questions {sum(len(u.questions) for u in users)}")


def _reuse_lines(user: ScheduledUser, mine: UserMatch) -> list[str]:
    """The user's reuse line, then one line per earlier file that would not be reused (damaged or
    linked: done again). The memory's files are checked against its manifest only by the run."""
    skipped = [f"    skipped: {line}" for line in mine.skipped]
    if mine.source is None:
        return [f"  user {user.user_id}: memory built in this run (no complete memory of fingerprint "
                f"{mine.memory[:12]})", *skipped]
    n = len(user.questions)
    return [f"  user {user.user_id}: memory reused from {mine.source.run.root} (run id {mine.source.run_id}), "
            f"answers reused {len(mine.answers)}/{n}, judgments reused {len(mine.judgments)}/{n}", *skipped]


def _revision_line(dataset: Dataset, config: Config, write: bool) -> str:
    """The dataset revision and how it is known; with `write`, the manifest written first."""
    if write:
        try:
            manifest = dataset_manifest.write_manifest(dataset, use_cache=config.image_cache)
        except OSError as exc:
            raise ConfigError(f"cannot write {dataset.root / MANIFEST_FILE}: {exc.strerror or exc}") from None
        how = "written now"
    elif run_plan.revision_status(dataset, config) == "declared":
        return f"dataset revision {DATASET_REVISION}: declared (no {MANIFEST_FILE}; --write-manifest writes one)"
    else:
        manifest, how = dataset_manifest.read_manifest(dataset.root), "matched"
    assert manifest is not None
    return (f"dataset revision {DATASET_REVISION}: verified ({MANIFEST_FILE} {how}: {len(manifest.files):,} files, "
            f"{sum(f.size for f in manifest.files):,} bytes, each of the listed size and sha256)")


def _checked(args: argparse.Namespace, request: RunRequest) -> tuple[Config, Dataset, dict[int, UserMatch], str]:
    """The run's preflight as `plan` runs it (configuration, judge, dataset, its revision, reuse), and
    the lines saying what it found."""
    config, _ = run_plan.configured(request)  # as the run's preflight
    config = config.model_copy(update={"prices": plan_cost.prices(args, config.prices)})
    judge, note = _judge_endpoint(config, args.simulate)
    settings = mobilemem_judge.judge_settings(config.judge, judge)
    dataset = run_plan.selected(request, config)
    revision = _revision_line(dataset, config, args.write_manifest)
    lines = [f"dataset {dataset.root}", revision,
             f"models: candidate {config.model}, judge {settings.model}{' (simulated)' if args.simulate else ''}",
             *([note] if note else [])]
    return config, dataset, _reuse(args, dataset, config, settings), "\n".join(lines)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    request = RunRequest(dataset=args.dataset, output=args.output, model=args.model, config=args.config,
                         users=args.users, limit_questions=args.limit_questions, simulate=args.simulate,
                         reuse=args.reuse, candidate=args.candidate)
    try:
        config, dataset, found, head = _checked(args, request)
    except (ConfigError, DatasetError) as exc:
        print(f"mobilemem: refused to plan: {exc}", file=sys.stderr)
        return 1
    written = f"the image cache{' and ' + MANIFEST_FILE if args.write_manifest else ''}"
    lines = [f"mobilemem plan: preflight passed; no model request sent, nothing written but {written}", head]
    if args.output is not None:
        run = RunDir.for_output(args.output, config.model, config.candidate.kind)
        lines.append(f"run directory {run.root}: {'exists: the run would refuse it' if run.root.exists() else 'free'}")
    users, k, m = dataset.users, args.iterations_per_session, args.iterations_per_question
    declared = plugin(config.candidate.kind)  # a baseline: no ingest request, one request per question
    k = k if declared.requests_per_session is None else declared.requests_per_session
    m = m if declared.requests_per_question is None else declared.requests_per_question
    if config.candidate.kind != DEFAULT_KIND:
        lines.append(f"candidate {config.candidate.kind}: {k} model requests per session, {m} per question, "
                     f"each answer request carrying {declared.answer_reads} besides the question (as its plug-in "
                     "declares)")
    lines += ["", _count(f"users {len(users)}, ", users, dataset),
              *(_count(f"  user {u.user_id} ({u.language}): ", [u], dataset) for u in users),
              "", "reuse (the first --reuse run holding the same memory fingerprint wins):",
              *(line for u in users for line in _reuse_lines(u, found[u.user_id])), ""]
    estimate, sent = _estimate_lines(dataset, found, config.judge.rubric, k, m, declared.answer_reads,
                                     config.candidate.context_size)
    money = plan_cost.cost_lines(sent, config.prices, args.output_tokens, args.judge_output_tokens)
    print("\n".join([*lines, *estimate, *([""] + money if money else [])]))
    return 0
