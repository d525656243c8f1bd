"""mobilemem.simulator.policy: role recognition and the deterministic policies, on hand-built
request bodies shaped like AgentScope's (no sockets)."""

import base64
import io
import json
import math
from string import Template

import pytest

from mobilemem.simulator import policy
from mobilemem.simulator.pixels import CANNOT_TELL
from mobilemem.simulator.faults import WRONG_ANSWER, FaultRule, FaultTable, rewrite
from mobilemem.simulator.vision import draw_fact

RUBRIC = Template(  # the shape of the judge's rubric (first sentence, the four fields, the closing line)
    "Your task is to classify an answer to a question as CORRECT or WRONG. You are given a question...\n\n"
    "Question: $question\nGold answer: $golden_answers\nEvidence: $evidence\nGenerated answer: $prediction\n\n"
    'Return exactly one JSON object: {"label": "CORRECT"} or {"label": "WRONG"}.')
QA = ("Question:\n{question}\nPlease answer the question based on the following memories:\n"
      "Use bm25_search, read and read_image to gather memories.")


def tool(name: str, props: dict[str, str], required: list[str] | None = None) -> dict:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in props.items()},
              "required": list(props) if required is None else required}
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool.", "parameters": schema}}


DAILY_WRITE = tool("daily_write", {"name": "string", "description": "string", "session_id": "string",
                                   "content": "string", "date": "string"}, ["name", "description", "session_id", "content"])
ANSWER_TOOLS = [tool("bm25_search", {"query": "string", "limit": "integer"}, ["query"]),
                tool("read", {"path": "string", "start_line": "integer", "end_line": "integer"}, ["path"]),
                tool("read_image", {"path": "string"})]


def user(*parts: str | dict, name: str = "user") -> dict:
    return {"role": "user", "name": name,
            "content": [{"type": "text", "text": p} if isinstance(p, str) else p for p in parts]}


def call(call_id: str, tool_name: str, **arguments: object) -> dict:
    return {"role": "assistant", "name": "agent", "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": tool_name, "arguments": json.dumps(arguments)}}]}


def result(call_id: str, name: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": text}


def image_part(colour: str, digit: int, fmt: str = "PNG") -> dict:
    buffer = io.BytesIO()
    draw_fact(colour, digit).save(buffer, format=fmt)
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    payload = base64.b64encode(buffer.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{payload}"}}


def body(messages: list[dict], tools: list[dict] | None = None, **extra: object) -> dict:
    return {"model": "m", "messages": messages, **({"tools": tools} if tools else {}), **extra}


def args_of(completion: policy.Completion, index: int = 0) -> dict:
    return json.loads(completion.tool_calls[index]["arguments"])


HITS = ("session/dialog/0_1.jsonl:4-4 [score=1.3]\nImage ID: image/uid0/camera photos/0_event_9.png\n\n"
        "daily/2025-03-01/kayaking.md:1-6 [score=1.1]\nThe first photo was red.\n"
        "- Image ID: image/uid0/camera photos/0_event_0.png (source: [[session/images/0_1/msg-a-image-1.png]])\n"
        "- Image ID: image/uid0/camera photos/0_event_1.JPG (source: [[session/images/0_1/msg-b-image-1.jpg]])\n"
        "- Image ID: image/uid0/camera photos/0_event_9.png (source: [[session/images/0_1/msg-c-image-1.png]])\n"
        "daily/2025-03-02/other.md:1-2 [score=0.5]\n- (source: [[session/images/0_2/msg-d-image-1.png]])\n")


def answer_conversation(question: str, *after: dict) -> dict:
    return body([{"role": "system", "name": "system", "content": "You answer."}, user(QA.format(question=question)),
                 *after], ANSWER_TOOLS)


# -- role recognition ---------------------------------------------------------------------------

def test_roles_are_recognised_in_the_documented_order():
    judge_text = RUBRIC.substitute(question="q", golden_answers="a", evidence="e", prediction="p")
    forced = {"type": "function", "function": {"name": "generate_structured_output"}}
    everything = [user(judge_text)]
    tools = [DAILY_WRITE, *ANSWER_TOOLS]
    assert policy.classify(body(everything, tools, tool_choice=forced)) == ("compression", False)
    assert policy.classify(body(everything, tools)) == ("judge", False)
    assert policy.classify(body([user("hi")], tools)) == ("ingest", False)
    assert policy.classify(body([user("hi")], ANSWER_TOOLS, tool_choice="none")) == ("answer", True)
    assert policy.classify(body([user("hi")], [tool("read", {"path": "string"})])) == ("plain", False)
    assert policy.reply("plain", body([user("hi")])).content == "OK."
    for choice in ("auto", "required"):
        assert policy.classify(body([user("hi")], ANSWER_TOOLS, tool_choice=choice)) == ("answer", False)


# -- argument names come from the schemas ---------------------------------------------------------

def test_argument_names_are_read_from_the_tool_schemas():
    renamed = [tool("bm25_search", {"limit": "integer", "q": "string"}, ["q"]), tool("read_image", {"ref": "string"})]
    step1 = policy.reply("answer", body([user(QA.format(question="Which digit was shown?"))], renamed))
    assert args_of(step1) == {"q": "Which digit was shown"}
    conversation = body([user(QA.format(question="Which digit?")), call("c1", "bm25_search", q="digit"),
                         result("c1", "bm25_search", HITS)], renamed)
    assert args_of(policy.reply("answer", conversation)) == {"ref": "session/images/0_1/msg-a-image-1.png"}
    writer = tool("daily_write", {"title": "string", "summary": "string", "body": "string"})
    note = args_of(policy.reply("ingest", body([user("[user @ 2025-03-01 09:00:00]\nKayaking today")], [writer])))
    assert set(note) == {"title", "summary", "body"} and "Kayaking" in note["body"]


# -- ingest -------------------------------------------------------------------------------------

SESSION = [  # the shape of ReMe's auto_memory user message (`user_message_create` + image sources)
    "Today: 2025-03-01\nExtra hint: (none)\nSession ID: 0_1\n\n# Recent Conversation\n\n"
    "[user @ 2025-03-01 09:00:00]\nToday I went kayaking at Lisbon harbour.\nIt was calm.\n\n"
    "[assistant @ 2025-03-01 09:00:00]\nThat sounds wonderful!\n\n"
    "[user @ 2025-03-01 09:00:00]\nImage ID: image/uid0/camera photos/0_event_0.png\n"
    "Image source: [[session/images/0_1/msg-305f31-image-1.png]]\n",
    image_part("red", 3),
    "\n\n[user @ 2025-03-01 09:00:00]\nImage ID: image/uid0/event (2)/照片 1.png\n"
    "Image source: [[session/images/0_1/msg-305f32-image-1.png]]\n",
    image_part("blue", 4),
    "\n\n[user @ 2025-03-01 09:00:00]\n今天我去里斯本港划皮划艇了。\n\n# Your Task\n\nRecord the key information "
    "from the conversation above.\n`daily_write name=<name> description=<description> session_id=0_1 "
    "date=2025-03-01 content=<body>`",
]


def test_ingest_writes_one_note_with_key_words_and_every_image_id_and_source():
    completion = policy.reply("ingest", body([{"role": "system", "content": "Note keeper."}, user(*SESSION)],
                                             [DAILY_WRITE]))
    assert [c["name"] for c in completion.tool_calls] == ["daily_write"]
    note = args_of(completion)
    assert (note["session_id"], note["date"]) == ("0_1", "2025-03-01")  # copied from ReMe's prompt
    lines = note["content"].splitlines()
    assert lines[1:] == [
        "- Image ID: image/uid0/camera photos/0_event_0.png (source: [[session/images/0_1/msg-305f31-image-1.png]])",
        "- Image ID: image/uid0/event (2)/照片 1.png (source: [[session/images/0_1/msg-305f32-image-1.png]])"]
    words = lines[0].removeprefix("Key words: ").split(", ")
    assert words[:6] == ["Today", "went", "kayaking", "Lisbon", "harbour", "calm"]
    assert "今天我去里斯本港划皮划艇了" in words and "Record" not in words and "Session" not in words
    assert note["name"] == "today-went-kayaking" and "\n" not in note["description"]


def test_ingest_caps_key_words_at_sixty():
    text = " ".join(f"word{chr(97 + i // 26)}{chr(97 + i % 26)}x" for i in range(100))
    note = args_of(policy.reply("ingest", body([user(f"[user @ t]\n{text}")], [DAILY_WRITE])))
    assert len(note["content"].removeprefix("Key words: ").split(", ")) == 60


def test_ingest_stops_after_one_note_and_when_final():
    first = body([user(*SESSION)], [DAILY_WRITE])
    again = body([user(*SESSION), call("c1", "daily_write", name="n", description="d", content="c"),
                  result("c1", "daily_write", "Saved memory/daily/2025-03-01/n.md")], [DAILY_WRITE])
    assert policy.reply("ingest", again) == policy.complete(again, "Saved 1 note.")
    final = policy.reply("ingest", {**first, "tool_choice": "none"})
    assert final.tool_calls == () and final.content == "Saved 0 notes."


# -- answer ---------------------------------------------------------------------------------------

def test_answer_step1_searches_with_the_question_words_only():
    completion = policy.reply("answer", answer_conversation("What colour was the background of the photo?"))
    assert [c["name"] for c in completion.tool_calls] == ["bm25_search"]
    assert args_of(completion) == {"query": "What colour was the background of the photo"}
    assert completion.finish_reason == "tool_calls"


@pytest.mark.parametrize(("question", "expected"), [  # the first hit citing a saved image, by its ordinal
    ("What colour was the photo I showed you?", "session/images/0_1/msg-a-image-1.png"),
    ("What colour was the second photo I showed you?", "session/images/0_1/msg-b-image-1.jpg"),
    ("What colour was the Tenth photo I showed you?", "session/images/0_1/msg-c-image-1.png"),
    ("我去里斯本港划皮划艇时给你看的第二张照片，背景是什么颜色？", "session/images/0_1/msg-b-image-1.jpg"),
])
def test_answer_step2_reads_the_image_the_ordinal_points_at(question, expected):
    conversation = answer_conversation(question, call("c1", "bm25_search", query="x"),
                                       result("c1", "bm25_search", HITS))
    completion = policy.reply("answer", conversation)
    assert [c["name"] for c in completion.tool_calls] == ["read_image"]
    assert args_of(completion) == {"path": expected}


def test_answer_step2_uses_the_latest_search_and_admits_when_nothing_is_found():
    conversation = answer_conversation("What colour?", call("c1", "bm25_search", query="x"),
                                       result("c1", "bm25_search", HITS), call("c2", "bm25_search", query="y"),
                                       result("c2", "bm25_search", "No hits. Image ID: none.txt"))
    assert policy.reply("answer", conversation) == policy.complete(conversation, policy.NOT_FOUND)


def _after_image(question: str, *images: dict) -> dict:
    return answer_conversation(
        question, call("c1", "bm25_search", query="x"), result("c1", "bm25_search", HITS),
        call("c2", "read_image", path="session/images/0_1/msg-a-image-1.png"),
        result("c2", "read_image", "<system-reminder>An image file is returned.</system-reminder>"),
        user("<system-reminder>The multimodal data:", "- abc (image file): ", *images, "</system-reminder>",
             name="system-reminder"))


def test_answer_comes_from_the_pixels_not_from_the_notes():
    # the search hits say "red"; the image received is blue
    completion = policy.reply("answer", _after_image("What colour was the first photo?", image_part("blue", 7)))
    assert completion.content == "The colour is blue." and completion.tool_calls == ()
    jpeg = _after_image("Which digit was shown on the sign?", image_part("green", 5, "JPEG"))
    assert policy.reply("answer", jpeg).content == "The digit is 5."
    both = _after_image("What was in the photo?", image_part("red", 1), image_part("yellow", 8))
    assert policy.reply("answer", both).content == "The colour is yellow and the digit is 8."
    chinese = _after_image("那张照片上显示的是哪个数字？", image_part("pink", 2))
    assert policy.reply("answer", chinese).content == "The digit is 2."


def test_answer_without_an_image_cannot_tell():
    text_only = answer_conversation(
        "What colour was the first photo?", call("c1", "bm25_search", query="x"), result("c1", "bm25_search", HITS),
        call("c2", "read_image", path="session/images/0_1/msg-a-image-1.png"),
        result("c2", "read_image", "Error: no image with Image ID 'image/uid0/camera photos/0_event_0.png'"))
    assert policy.reply("answer", text_only).content == CANNOT_TELL
    unreadable = _after_image("What colour?", {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
    assert policy.reply("answer", unreadable).content == CANNOT_TELL
    final = {**answer_conversation("What colour?"), "tool_choice": "none"}
    assert policy.reply("answer", final) == policy.complete(final, CANNOT_TELL)


# -- judge ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("gold", "prediction", "label"), [
    ("red", "The colour is Red.", "CORRECT"),
    ("red", "The colour is blue.", "WRONG"),
    ("[7, seven, 7 XQZMARK]", "The digit is seven", "CORRECT"),
    ("[7, seven]", "The digit is 1.", "WRONG"),
    ("Lisbon  Harbour!", "We went to\nlisbon harbour, I think.\n\nThat is all.", "CORRECT"),
    ("blue", "", "WRONG"),
])
def test_judge_labels_by_normalised_containment(gold, prediction, label):
    text = RUBRIC.substitute(question="What colour?", golden_answers=gold, evidence="{'image': 'x'}\nctx",
                             prediction=prediction)
    completion = policy.reply("judge", body([user(text)], temperature=0))
    assert json.loads(completion.content) == {"label": label} and completion.tool_calls == ()


# -- compression ----------------------------------------------------------------------------------

def test_compression_fills_every_property_of_the_forced_schema():
    schema = {"type": "object", "required": ["task_overview", "count"],
              "properties": {"task_overview": {"type": "string"}, "next_steps": {"type": "string"},
                             "count": {"type": "integer"}, "done": {"type": "boolean"},
                             "tags": {"type": "array", "items": {"type": "string"}}}}
    tools = [{"type": "function", "function": {"name": "generate_structured_output", "parameters": schema}}]
    forced = {"type": "function", "function": {"name": "generate_structured_output"}}
    request = body([user("We discussed kayaking at Lisbon harbour.")], tools, tool_choice=forced)
    assert policy.classify(request) == ("compression", False)
    completion = policy.reply("compression", request)
    assert [c["name"] for c in completion.tool_calls] == ["generate_structured_output"]
    args = args_of(completion)
    assert set(args) == set(schema["properties"])
    assert "kayaking" in args["task_overview"] and args["task_overview"] == args["next_steps"]
    assert (args["count"], args["done"], args["tags"]) == (0, False, [])


# -- usage ----------------------------------------------------------------------------------------

def test_usage_follows_the_documented_formula():
    tools = [tool("bm25_search", {"query": "string"})]
    messages = [user("abcd", image_part("red", 1)), call("c1", "bm25_search", query="é"),
                result("c1", "bm25_search", "颜色")]
    request = body(messages, tools, enable_thinking=True)
    # "abcd" + the call's name and arguments + "颜色" (6 bytes) + the tools JSON (ASCII)
    prompt_bytes = (4 + len("bm25_search") + len(json.dumps({"query": "é"})) + 6
                    + len(json.dumps(tools, ensure_ascii=False)))
    completion = policy.complete(request, "The colour is red.")
    assert completion.usage == {
        "prompt_tokens": math.ceil(prompt_bytes / 4) + 256,
        "completion_tokens": math.ceil(18 / 4) + 8,
        "total_tokens": math.ceil(prompt_bytes / 4) + 256 + math.ceil(18 / 4) + 8,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 8},
    }
    calls = policy.complete(body(messages), tool_calls=[{"name": "ab", "arguments": '{"x": 1}'}]).usage
    assert calls["completion_tokens"] == math.ceil((2 + 8) / 4) and "completion_tokens_details" not in calls


# -- reply-level faults (pure) ----------------------------------------------------------------------

def test_fault_rules_match_role_substring_and_times():
    table = FaultTable([FaultRule("answer", "kayak", "http_500", times=1), FaultRule("*", "", "truncated")])
    assert table.select("answer", "no match here").kind == "truncated"
    assert table.select("answer", "kayaking").kind == "http_500"
    assert table.select("answer", "kayaking").kind == "truncated"
    with pytest.raises(ValueError, match="unknown fault kind"):
        FaultRule("answer", "", "explode")
    with pytest.raises(ValueError, match="calls must be >= 1"):
        FaultRule("answer", "", "many_tool_calls", calls=0)


def test_reply_faults_rewrite_the_completion():
    request = answer_conversation("Which digit?", call("c1", "bm25_search", query="x"),
                                  result("c1", "bm25_search", HITS))
    normal = policy.reply("answer", request)
    assert rewrite("endless_tool_calls", "answer", request, normal).tool_calls[0]["name"] == "bm25_search"
    assert rewrite("invalid_tool_args", "answer", request, normal).tool_calls == (
        {"name": "bm25_search", "arguments": '{"query": '},)
    unknown = rewrite("unknown_tool", "answer", request, normal)
    assert unknown.tool_calls == ({"name": "no_such_tool", "arguments": "{}"},)
    final = {**request, "tool_choice": "none"}
    text = policy.reply("answer", final)
    assert rewrite("endless_tool_calls", "answer", final, text) == text
    flood = rewrite("many_tool_calls", "answer", request, normal, FaultRule("answer", "", "many_tool_calls", calls=7))
    assert [c["name"] for c in flood.tool_calls] == ["bm25_search"] * 7
    assert rewrite("many_tool_calls", "answer", final, text) == text
    cut = rewrite("truncated", "answer", final, policy.complete(final, "The colour is red."))
    assert (cut.content, cut.finish_reason) == ("The colour is", "length")


def test_wrong_answer_replaces_only_the_final_text():
    request = answer_conversation("Which digit?", call("c1", "bm25_search", query="x"),
                                  result("c1", "bm25_search", HITS))
    searching = policy.reply("answer", request)
    assert searching.tool_calls and rewrite("wrong_answer", "answer", request, searching) == searching
    final = {**request, "tool_choice": "none"}
    wrong = rewrite("wrong_answer", "answer", final, policy.complete(final, "The digit is 9."))
    assert (wrong.content, wrong.tool_calls, wrong.finish_reason) == (WRONG_ANSWER, (), "stop")
    every_sample_gold = "[9, nine, purple, 5, five, red, 0, 零, green, 2, two, cyan]"
    text = RUBRIC.substitute(question="Which digit?", golden_answers=every_sample_gold, evidence="e",
                             prediction=wrong.content)
    assert json.loads(policy.reply("judge", body([user(text)])).content) == {"label": "WRONG"}
