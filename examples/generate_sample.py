"""Generate a synthetic MobileMem-Omni dataset in the official layout (DESIGN §3).

    python examples/generate_sample.py --out DIR [--users N] [--sessions N] [--turns N]
        [--images N] [--questions N] [--seed N] [--image-size WxH] [--image-format png|jpeg]
        [--noise N] [--extract]

Writes ``data.jsonl``, ``questions.jsonl`` and ``image.zip`` (and with ``--extract`` also
``image/``, through ``python -m zipfile -e``'s own code path). The output is a pure function of
the arguments: byte-identical on every run. Every image is ``draw_fact(colour, digit)`` from
``mobilemem.simulator.vision``, so a visual question can be answered from its pixels alone.
For benchmarks at the real data's scale, ``--image-format jpeg`` stores the ordinary images as
``.jpg`` (JPEG quality 90) and ``--noise N`` adds deterministic per-image noise of amplitude N
(uniform in -N..N per channel) so that their sizes are realistic; beyond 144 sessions per user
(12 activities x 12 places) the pairs are reused with a trip suffix on the place.

The sample reproduces the published data's awkward parts: sessions out of chronological file
order and a tie on ``event_start_time``; dialogue folders that differ from archive folders
(``camera photos`` vs ``camera_photos``, ``event`` vs ``chat_images``); a ``.png`` holding JPEG
bytes; an MPO ``.jpg`` whose second frame shows a different fact; a CJK member name (UTF-8
flag); a member name stored GBK-encoded without the UTF-8 flag. Every reference field carries a
unique ``XQZMARK-<kind>-<uuid>-<n>`` string so a test can prove it never reaches the candidate.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from PIL import Image

from mobilemem.simulator.vision import COLOURS, draw_fact
from sample_text import ACTIVITIES, DIGIT_WORDS, NAMES, OCCUPATIONS, ORDINALS, PLACES, TEXT, TRIPS

MARKER = "XQZMARK"
ZIP_DATE_TIME = (2025, 1, 1, 0, 0, 0)
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
# (dialogue folder, archive folder): the published path aliases, by session parity.
FOLDER_ALIASES = (("camera photos", "camera_photos"), ("event", "chat_images"))
CJK_STEM, GBK_STEM = "照片", "相册"
MAX_IMAGES = 10
PAIRS = len(ACTIVITIES) * len(PLACES)  # distinct (activity, place) sessions before a trip suffix
IMAGE_FORMATS = ("png", "jpeg")
MAX_NOISE = 64

@dataclass
class Photo:
    uid: int
    session: int  # n of the session (1-based)
    index: int  # k within the session (1-based)
    colour: str
    digit: int
    stem: str
    ext: str  # ".png" or ".jpg"
    kinds: tuple[str, ...]  # special cases: "jpeg_in_png", "mpo", "cjk", "gbk"
    dialogue_folder: str
    archive_folder: str
    second_frame: tuple[str, int] | None = None  # MPO only

    @property
    def file(self) -> str:
        return self.stem + self.ext

    @property
    def dialogue_path(self) -> str:
        return f"image/uid{self.uid}/{self.dialogue_folder}/{self.file}"

    @property
    def member(self) -> str:
        return f"uid{self.uid}/{self.archive_folder}/{self.file}"


@dataclass
class Session:
    uid: int
    n: int
    act: str
    place: str
    start: datetime
    minutes: int
    photos: list[Photo] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return f"{self.uid}_{self.n}"

    @property
    def event_id(self) -> str:
        return f"{self.uid}_e_{self.n}"

    def words(self) -> dict[str, str]:
        return {"act": self.act, "Act": self.act[:1].upper() + self.act[1:], "place": self.place}


class Markers:
    """Hands out unique ``XQZMARK-<kind>-<uuid>-<n>`` strings for one user."""

    def __init__(self, uid: int) -> None:
        self.uid = uid
        self.counts: dict[str, int] = {}

    def __call__(self, kind: str) -> str:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return f"{MARKER}-{kind}-{self.uid}-{self.counts[kind]}"


class _GbkZipInfo(zipfile.ZipInfo):
    """A member name stored GBK-encoded without the UTF-8 flag, as Chinese Windows tools do."""

    def _encodeFilenameFlags(self) -> tuple[bytes, int]:
        return self.filename.encode("gbk"), self.flag_bits & ~0x800


def _special_kinds(uid: int, n: int, k: int, users: int) -> tuple[str, ...]:
    """Where the special files go: uid 0 holds the odd bytes, uid 1 the odd names."""
    if k != 1 or n > 2 or uid > 1:
        return ()
    content = ("jpeg_in_png",) if n == 1 else ("mpo",)
    name = ("cjk",) if n == 1 else ("gbk",)
    if users == 1:
        return content + name
    return content if uid == 0 else name


def _times(rng: random.Random, uid: int, count: int, users: int) -> list[datetime]:
    """Start times in file order: several days; uid 0 out of order; one tie (DESIGN §3)."""
    day = datetime(2024, 3, 1) + timedelta(days=rng.randrange(30))
    starts = []
    for _ in range(count):
        day += timedelta(days=rng.randint(1, 4))
        starts.append(day.replace(hour=rng.randint(8, 19), minute=rng.choice((0, 15, 30, 45))))
    if uid == 0:  # session 3 earlier than session 2 (or 2 earlier than 1)
        i = 1 if count >= 3 else 0
        starts[i], starts[i + 1] = starts[i + 1], starts[i]
    if count >= 3 and uid == (1 if users >= 2 else 0):  # last session ties with its chronological predecessor
        earlier = [s for s in starts[:-1] if s < starts[-1]]
        if earlier:
            starts[-1] = max(earlier)
    return starts


def _plan_user(rng: random.Random, uid: int, lang: str, users: int, sessions: int, images: int,
               image_format: str = "png") -> list[Session]:
    acts, places = rng.sample(range(len(ACTIVITIES)), len(ACTIVITIES)), rng.sample(range(len(PLACES)), len(PLACES))
    starts = _times(rng, uid, sessions, users)
    column = 0 if lang == "en" else 1
    plan = []
    for i in range(sessions):
        act = ACTIVITIES[acts[i % len(acts)]][column]
        place = PLACES[places[(i + i // len(places)) % len(places)]][column]
        if i >= PAIRS:  # the pair repeats every PAIRS sessions: a later trip to the same place
            place += TRIPS[lang][i // PAIRS - 1]
        session = Session(uid, i + 1, act, place, starts[i], rng.randint(2, 8) * 15)
        dialogue_folder, archive_folder = FOLDER_ALIASES[i % 2]
        for k in range(1, images + 1):
            kinds = _special_kinds(uid, session.n, k, users)
            stem = {"cjk": f"{CJK_STEM}_{uid}_{session.n}", "gbk": f"{GBK_STEM}_{uid}_{session.n}"}
            photo = Photo(uid, session.n, k, rng.choice(COLOURS), rng.randrange(10),
                          next((stem[x] for x in kinds if x in stem), f"{uid}_event_{session.n}_{k}"),
                          _extension(kinds, image_format), kinds, dialogue_folder, archive_folder)
            if "mpo" in kinds:
                photo.second_frame = (rng.choice([c for c in COLOURS if c != photo.colour]), rng.randrange(10))
            session.photos.append(photo)
        plan.append(session)
    return plan


def _extension(kinds: tuple[str, ...], image_format: str) -> str:
    if "mpo" in kinds or (image_format == "jpeg" and "jpeg_in_png" not in kinds):
        return ".jpg"
    return ".png"


def _dialogue(rng: random.Random, session: Session, lang: str, turns: int) -> list[dict]:
    text, words = TEXT[lang], session.words()
    photos = {2 * k + 1: photo for k, photo in enumerate(session.photos, start=1)}
    dialogue = []
    for k in range(1, turns + 1):
        role = "user" if k % 2 else "assistant"
        if k in photos:
            dialogue.append({"turn": k, "role": role, "content_type": "image",
                             "image_inline": photos[k].dialogue_path})
            continue
        if k <= 2:
            template = text["intro" if k == 1 else "reply"]
        elif k - 1 in photos:
            template = text["thanks"]
        else:
            template = rng.choice(text[role])
        dialogue.append({"turn": k, "role": role, "content_type": "text", "content": template.format(**words)})
    return dialogue


def _session_record(rng: random.Random, session: Session, lang: str, turns: int, mark: Markers) -> dict:
    words, photos = session.words(), session.photos
    event = TEXT["en"]["event_phrase"].format(**words)
    return {
        "session_id": session.session_id,
        "event_id": session.event_id,
        "event_start_time": session.start.strftime(TIME_FORMAT),
        "event_end_time": (session.start + timedelta(minutes=session.minutes)).strftime(TIME_FORMAT),
        "event_name": TEXT[lang]["event"].format(**words),
        "dialogue_goal": TEXT[lang]["goal"].format(**words),
        "dialogue_summary": f"The user talked about {event} and shared {len(photos)} photo(s). {mark('summary')}",
        "image_refs": [{"image_path": p.dialogue_path,
                        "description": f"A sign showing the digit {p.digit} on a {p.colour} background, "
                                       f"taken during {event}. {mark('desc')}"} for p in photos],
        "image_candidates": [p.dialogue_path for p in photos],
        "memory_points": [
            {"index": 1, "type": "event", "content": f"User went {event} on {session.start:%Y-%m-%d}. {mark('mem')}"},
            {"index": 2, "type": "image", "content": f"User shared {len(photos)} photo(s) of {event}. {mark('mem')}"},
        ],
        "session_stats": {"num_turns": turns, "num_image_turns": len(photos), "note": mark("stats")},
        "dialogue": _dialogue(rng, session, lang, turns),
    }


def _user_record(rng: random.Random, uid: int, lang: str, plan: list[Session], turns: int, mark: Markers) -> dict:
    first = min(plan, key=lambda s: s.start)
    return {
        "uuid": uid,
        "language": lang,
        "Basic_Profile": {"name": rng.choice(NAMES[lang]), "age": rng.randint(22, 60),
                          "occupation": rng.choice(OCCUPATIONS), "note": mark("profile")},
        "Init_State": {"mood": "relaxed", "current_focus": "travel and outdoor hobbies", "note": mark("init")},
        "Important_Dates": [{"date": f"{first.start:%Y-%m-%d}", "description": f"First trip. {mark('dates')}"}],
        "session_stats_summary": {"num_sessions": len(plan), "num_turns": turns * len(plan),
                                  "num_image_turns": sum(len(s.photos) for s in plan), "note": mark("statsum")},
        "_errors": [{"stage": "image_generation", "message": f"retried once. {mark('errors')}"}],
        "sessions": [_session_record(rng, s, lang, turns, mark) for s in plan],
    }


def _photo_ref(photo: Photo, session: Session, lang: str) -> str:
    text = TEXT[lang]
    if len(session.photos) == 1:
        return text["only_photo"].format(**session.words())
    return text["photo"].format(ordinal=ORDINALS[lang][photo.index - 1], **session.words())


def _question(uid: int, n: int, qtype: str, difficulty: str, text: str, answer: list[str],
              evidence: list[tuple[Session, Photo | None, object]]) -> dict:
    return {
        "question_id": f"{uid}_q_{n}", "question": text, "answer": answer, "question_format": "open",
        "question_type": qtype, "difficulty": difficulty,
        "evidence": [{"event_id": s.event_id, "session_id": s.session_id,
                      "image_path": p.dialogue_path if p else None, "explanation": e} for s, p, e in evidence],
        "image_refs": [p.dialogue_path for _, p, _ in evidence if p],
        "source_session_ids": [s.session_id for s, _, _ in evidence],
        "source_event_ids": [s.event_id for s, _, _ in evidence],
    }


def _visual_evidence(session: Session, photo: Photo, mark: Markers) -> tuple[Session, Photo, dict]:
    event = TEXT["en"]["event_phrase"].format(**session.words())
    return session, photo, {"image": f"The photo shows the digit {photo.digit} on a {photo.colour} background. "
                                     f"{mark('evimg')}",
                            "context": f"Shared while the user was {event}. {mark('evctx')}"}


def _visual_questions(rng: random.Random, uid: int, lang: str, plan: list[Session], count: int,
                      mark: Markers) -> list[dict]:
    owner = {id(p): s for s in plan for p in s.photos}
    photos = [p for s in plan for p in s.photos]
    special = [p for p in photos if p.kinds]
    rest = [p for p in photos if not p.kinds]
    chosen = (special + rng.sample(rest, len(rest)))[:count]
    kind = 0 if uid == 0 else rng.randrange(2)  # 0: digit, 1: colour
    questions = []
    for n, photo in enumerate(chosen, start=1):
        session, is_digit = owner[id(photo)], (kind + n - 1) % 2 == 0
        ref = _photo_ref(photo, session, lang)
        if is_digit:
            gold = str(photo.digit)
            answer = [gold, DIGIT_WORDS[lang][photo.digit], f"{gold} {mark('ans')}"]
        else:
            answer = [photo.colour, f"{photo.colour} {mark('ans')}"]
        text = TEXT[lang]["digit_q" if is_digit else "colour_q"].format(photo=ref)
        questions.append(_question(uid, n, "visual_reasoning", "medium" if is_digit else "easy", text,
                                   answer, [_visual_evidence(session, photo, mark)]))
    return questions


def _other_questions(rng: random.Random, uid: int, lang: str, plan: list[Session], first_n: int,
                     mark: Markers) -> list[dict]:
    text = TEXT[lang]
    s1, s2 = rng.sample(plan, 2)
    p1, p2 = rng.choice(s1.photos), rng.choice(s2.photos)
    total = str(p1.digit + p2.digit)
    multi = _question(uid, first_n, "multi_visual_reasoning", "hard",
                      text["sum_q"].format(photo=_photo_ref(p1, s1, lang), photo2=_photo_ref(p2, s2, lang)),
                      [total, f"{total} {mark('ans')}"],
                      [_visual_evidence(s1, p1, mark), _visual_evidence(s2, p2, mark)])
    pairs = [(a, b) for i, a in enumerate(plan) for b in plan[i + 1:] if a.start != b.start]
    inverted = [(a, b) for a, b in pairs if a.start > b.start]
    a, b = inverted[0] if inverted else rng.choice(pairs)
    earlier = min((a, b), key=lambda s: s.start)
    temporal = _question(uid, first_n + 1, "temporal_reasoning", "medium",
                         text["first_q"].format(event=text["event_phrase"].format(**a.words()),
                                                event2=text["event_phrase"].format(**b.words())),
                         [text["event_phrase"].format(**earlier.words()),
                          f"{text['event_phrase'].format(**earlier.words())} {mark('ans')}"],
                         [(s, None, f"{s.event_id} started {s.start:%Y-%m-%d %H:%M}. {mark('evid')}") for s in (a, b)])
    unique = [s for s in plan if sum(t.act == s.act for t in plan) == 1] or plan
    where = rng.choice(unique)
    recall = _question(uid, first_n + 2, "factual_recall", "easy", text["where_q"].format(**where.words()),
                       [where.place, f"{where.place} {mark('ans')}"],
                       [(where, None, f"The user said they went {where.act} at {where.place}. {mark('evid')}")])
    return [multi, temporal, recall]


def _noisy(image: Image.Image, amount: int, key: list[int]) -> Image.Image:
    """``image`` plus uniform noise in -amount..amount per channel, a pure function of ``key``."""
    if amount == 0:
        return image
    rng = np.random.default_rng(key)
    pixels = np.asarray(image, dtype=np.int16)
    pixels += rng.integers(-amount, amount + 1, size=pixels.shape, dtype=np.int16)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def _image_bytes(photo: Photo, size: tuple[int, int], image_format: str = "png", noise: int = 0,
                 seed: int = 0) -> bytes:
    buffer = io.BytesIO()
    key = [seed, photo.uid, photo.session, photo.index]
    image = _noisy(draw_fact(photo.colour, photo.digit, size), noise, [*key, 0])
    if "mpo" in photo.kinds:
        assert photo.second_frame is not None
        second = _noisy(draw_fact(*photo.second_frame, size), noise, [*key, 1])
        image.save(buffer, format="MPO", save_all=True, append_images=[second], quality=85)
        if Image.open(io.BytesIO(buffer.getvalue())).format != "MPO":
            raise RuntimeError(f"Pillow did not write an MPO for {photo.member}")
    elif "jpeg_in_png" in photo.kinds:
        image.save(buffer, format="JPEG", quality=85)
    elif image_format == "jpeg":
        image.save(buffer, format="JPEG", quality=90)
    else:
        image.save(buffer, format="PNG")
    return buffer.getvalue()


def _write_zip(path: Path, photos: list[Photo], size: tuple[int, int], image_format: str = "png",
               noise: int = 0, seed: int = 0) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for photo in photos:
            info = (_GbkZipInfo if "gbk" in photo.kinds else zipfile.ZipInfo)(photo.member, ZIP_DATE_TIME)
            raw = photo.member.encode("gbk")
            if "gbk" in photo.kinds and (b"\\" in raw or raw.count(b"/") != 2):  # no trail byte may split a path
                raise ValueError(f"{photo.member!r} is not a safe GBK member name")
            info.create_system, info.external_attr = 3, 0o100644 << 16
            info.compress_type = zipfile.ZIP_STORED
            archive.writestr(info, _image_bytes(photo, size, image_format, noise, seed))


def _dump_jsonl(path: Path, records: list[dict]) -> None:
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in records]
    path.write_bytes("".join(lines).encode("utf-8"))


def _check_arguments(out: Path, users: int, sessions: int, turns: int, image_size: tuple[int, int],
                     image_format: str = "png", noise: int = 0) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"refusing to write into {out}: it exists and is not an empty directory")
    if users < 1:
        raise ValueError("--users must be at least 1")
    if not 2 <= sessions <= PAIRS * (len(TRIPS["en"]) + 1):
        raise ValueError(f"--sessions must be 2..{PAIRS * (len(TRIPS['en']) + 1)} (out-of-order and tie cases)")
    if turns < 3:
        raise ValueError("--turns must be at least 3 (an introduction, a reply and a photo)")
    if image_size[0] < 160 or image_size[1] < 120:
        raise ValueError("--image-size must be at least 160x120")
    if image_format not in IMAGE_FORMATS:
        raise ValueError(f"--image-format must be one of {', '.join(IMAGE_FORMATS)}")
    if not 0 <= noise <= MAX_NOISE:
        raise ValueError(f"--noise must be 0..{MAX_NOISE}")


def generate(out: Path | str, *, users: int = 3, sessions: int = 4, turns: int = 8, images: int = 2,
             questions: int = 3, seed: int = 0, image_size: tuple[int, int] = (320, 240),
             image_format: str = "png", noise: int = 0, extract: bool = False) -> None:
    """Write the dataset into the new or empty directory ``out``.

    ``images`` per session is clamped to 1..min(10, (turns - 1) // 2) (photos are user turns
    3, 5, 7, ..., each followed by an assistant reply); ``questions`` visual questions per
    user are clamped to the user's photo count (the special files are asked about first).
    ``image_format="jpeg"`` writes the ordinary images as ``.jpg`` JPEG (quality 90); ``noise``
    adds deterministic per-image noise of that amplitude to every image."""
    out = Path(out)
    _check_arguments(out, users, sessions, turns, image_size, image_format, noise)
    images = max(1, min(images, MAX_IMAGES, (turns - 1) // 2))
    rng = random.Random(seed)
    data, question_lines, photos = [], [], []
    for uid in range(users):
        lang, mark = ("en" if uid % 2 == 0 else "Chinese"), Markers(uid)
        plan = _plan_user(rng, uid, lang, users, sessions, images, image_format)
        data.append(_user_record(rng, uid, lang, plan, turns, mark))
        visual = _visual_questions(rng, uid, lang, plan, max(0, questions), mark)
        others = _other_questions(rng, uid, lang, plan, len(visual) + 1, mark)
        question_lines.append({"uuid": uid, "language": lang, "questions": visual + others})
        photos += [p for s in plan for p in s.photos]
    out.mkdir(parents=True, exist_ok=True)
    _dump_jsonl(out / "data.jsonl", data)
    _dump_jsonl(out / "questions.jsonl", question_lines)
    _write_zip(out / "image.zip", photos, image_size, image_format, noise, seed)
    if extract:
        zipfile.main(["-e", str(out / "image.zip"), str(out / "image")])


def _summary(out: Path) -> str:
    users = [json.loads(line) for line in (out / "data.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [q for line in (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 for q in json.loads(line)["questions"]]
    with zipfile.ZipFile(out / "image.zip") as archive:
        images = len(archive.infolist())
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    visual = sum(q["question_type"] == "visual_reasoning" for q in questions)
    return (f"{out}: {len(users)} users, {sum(len(u['sessions']) for u in users)} sessions, {images} images, "
            f"{visual} selected visual questions, {total} bytes")


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WxH, e.g. 320x240, got {text!r}") from None
    return width, height


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="new or empty output directory")
    parser.add_argument("--users", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=4, help="sessions per user")
    parser.add_argument("--turns", type=int, default=8, help="turns per session")
    parser.add_argument("--images", type=int, default=2, help="image turns per session")
    parser.add_argument("--questions", type=int, default=3, help="visual_reasoning questions per user")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--image-size", type=_size, default=(320, 240), metavar="WxH")
    parser.add_argument("--image-format", choices=IMAGE_FORMATS, default="png",
                        help="png (default) or jpeg: ordinary images as .jpg, JPEG quality 90")
    parser.add_argument("--noise", type=int, default=0, help=f"per-image noise amplitude 0..{MAX_NOISE} (default 0)")
    parser.add_argument("--extract", action="store_true", help="also run python -m zipfile -e into OUT/image")
    args = parser.parse_args(argv)
    try:
        generate(args.out, users=args.users, sessions=args.sessions, turns=args.turns, images=args.images,
                 questions=args.questions, seed=args.seed, image_size=args.image_size,
                 image_format=args.image_format, noise=args.noise, extract=args.extract)
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(_summary(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
