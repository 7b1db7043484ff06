#!/usr/bin/env python3
"""Writes server/chat/testdata/golden-harmony.json: Python jinja2's renderings
of gpt-oss's chat template (the harmony format) on the conversations of
scripts/chat-template-golden.py and on conversations of its own, which
exercise what only this template reads: reasoning_effort, model_identity and
builtin_tools (chat_template_kwargs), a developer message, the analysis of
an assistant's tool call ("thinking"), tool results, a final assistant turn
rendered for training, and the template's raise_exception checks.

The environment and the file's shape are chat-template-golden.py's (imported,
not copied). One rule is added to its to_template_messages: an assistant
message's reasoning (OpenAI-compatible servers' reasoning_content on the
wire) is set in the template's dict as both "reasoning_content" (Qwen3's
templates read it) and "thinking" (gpt-oss's), as server/chat does; and where the template fails on a tool call's content
None but renders "" (string_content, probed as server/chat's
NeedsStringContent), the content is "", as the server passes it.

Usage: python3 scripts/chat-template-golden-harmony.py [template] [out-file]
       (defaults: ../shared/models/templates-more/openai-gpt-oss-120b.jinja,
       server/chat/testdata/golden-harmony.json, relative to the repository
       root). Needs only jinja2 (3.1.6 used).
"""

import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("golden", os.path.join(ROOT, "scripts", "chat-template-golden.py"))
golden = importlib.util.module_from_spec(spec)
spec.loader.exec_module(golden)

WEATHER_TOOL, SEARCH_TOOL = golden.WEATHER_TOOL, golden.SEARCH_TOOL
CALL, CALL2 = golden.CALL, golden.CALL2

# A tool whose parameters take the template's other type renderings: arrays
# of objects and of numbers, oneOf, a list of types, nullable, an enum default.
SHAPES_TOOL = {
    "type": "function",
    "function": {
        "name": "plan_trip",
        "description": "Plan a trip",
        "parameters": {
            "type": "object",
            "properties": {
                "stops": {"type": "array", "items": {"type": "object", "properties": {
                    "city": {"type": "string"}, "nights": {"type": "integer"}}, "required": ["city"]}},
                "budget": {"type": "array", "items": {"type": "number"}, "nullable": True},
                "mode": {"type": "string", "enum": ["train", "car"], "default": "train"},
                "when": {"oneOf": [{"type": "string", "description": "a date"}, {"type": "integer"}]},
                "notes": {"type": ["string", "null"], "description": "Free text"},
                "tags": {"type": "array"},
                "pet": {"type": "string", "nullable": True},
                "extra": {"type": "object"},
            },
            "required": ["stops"],
        },
    },
}
# More of the template's type rendering: oneOf variants with descriptions
# and defaults, oneOf with object variants (any), nested arrays, defaults of
# each kind, an empty object schema, unicode names.
SHAPES2_TOOL = {
    "type": "function",
    "function": {
        "name": "configure",
        "description": "Configure — ünïcode",
        "parameters": {
            "type": "object",
            "properties": {
                "level": {"oneOf": [{"type": "integer", "description": "a number", "default": 3},
                                    {"type": "string", "enum": ["lo", "hi"]}], "description": "How much"},
                "target": {"oneOf": [{"type": "object"}, {"type": "array", "items": {"type": "string"}}]},
                "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
                "deep": {"type": "array", "items": {"type": "object", "properties": {
                    "a_rather_long_property_name": {"type": "string"}, "another_long_one": {"type": "number"}}}},
                "ratio": {"type": "number", "default": 0.5},
                "flag": {"type": "boolean", "default": False},
                "names": {"type": "array", "items": {"type": "string"}, "default": ["x", "y"]},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a", "description": "The mode"},
                "opts": {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]},
                "any": {},
            },
            "required": ["level", "grid"],
        },
    },
}
ONEOF_INT_DEFAULT_TOOL = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {
    "type": "object", "properties": {"x": {"oneOf": [{"type": "integer"}, {"type": "string"}], "default": 1}}}}}
NO_PARAMS_TOOL = {"type": "function", "function": {"name": "get_time", "description": "The time now"}}

THOUGHT = "The user wants the weather in Zürich. I should call get_weather."

# Conversations in OpenAI's wire shape (reasoning_content: the assistant's
# reasoning, as a client sends it back).
CONVERSATIONS = {
    "harmony_effort_high": dict(messages=[
        {"role": "user", "content": "Prove that 17 is prime."},
    ], add_generation_prompt=True, chat_template_kwargs={"reasoning_effort": "high"}),
    "harmony_effort_low_identity": dict(messages=[
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Sky colour?"},
    ], add_generation_prompt=True, chat_template_kwargs={"reasoning_effort": "low", "model_identity": "You are Troupe."}),
    "harmony_developer": dict(messages=[
        {"role": "developer", "content": "Talk like a pirate.\nNever use more than two sentences."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Ahoy!"},
        {"role": "user", "content": "Where is the treasure?"},
    ], add_generation_prompt=True),
    "harmony_builtin_tools": dict(messages=[
        {"role": "user", "content": "Search for news."},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True,
        chat_template_kwargs={"builtin_tools": ["browser", "python"], "reasoning_effort": "medium"}),
    "harmony_call_pending": dict(messages=[
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "reasoning_content": THOUGHT, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call12345", "content": '{"temperature": 21.5, "condition": "sunny"}'},
    ], tools=[WEATHER_TOOL, SEARCH_TOOL], add_generation_prompt=True),
    "harmony_call_answered": dict(messages=[
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "reasoning_content": THOUGHT, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call12345", "content": "sunny, 21.5 °C"},
        {"role": "assistant", "content": "It is sunny and 21.5 °C.", "reasoning_content": "Report it."},
        {"role": "user", "content": "And tomorrow?"},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True),
    "harmony_call_content_as_analysis": dict(messages=[
        {"role": "user", "content": "Search fondue."},
        {"role": "assistant", "content": "Let me search.", "tool_calls": [CALL2, CALL]},
        {"role": "tool", "tool_call_id": "call67890", "content": "3 results"},
    ], tools=[SEARCH_TOOL, WEATHER_TOOL], add_generation_prompt=True),
    "harmony_training_final": dict(messages=[
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "Simple arithmetic."},
    ], add_generation_prompt=False),
    "harmony_shapes": dict(messages=[
        {"role": "user", "content": "Plan a trip."},
    ], tools=[SHAPES_TOOL, NO_PARAMS_TOOL], add_generation_prompt=True),
    "harmony_shapes_more": dict(messages=[
        {"role": "system", "content": "Configure things."},
        {"role": "user", "content": "Go."},
    ], tools=[SHAPES2_TOOL], add_generation_prompt=True, chat_template_kwargs={"reasoning_effort": "low"}),
    "harmony_oneof_int_default": dict(messages=[
        {"role": "user", "content": "Go."},
    ], tools=[ONEOF_INT_DEFAULT_TOOL], add_generation_prompt=True),
    "harmony_channel_in_content": dict(messages=[
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<|channel|>analysis<|message|>hm<|end|>"},
        {"role": "user", "content": "Again"},
    ], add_generation_prompt=True),
    "harmony_content_and_thinking": dict(messages=[
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Checking.", "reasoning_content": "Call it.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call12345", "content": "sunny"},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True),
    "harmony_tool_without_description": dict(messages=[
        {"role": "user", "content": "Time?"},
    ], tools=[{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}],
        add_generation_prompt=True),
    "harmony_tool_empty_description": dict(messages=[
        {"role": "user", "content": "Time?"},
    ], tools=[{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}},
                                                "description": ""}}],
        add_generation_prompt=True),
    "harmony_tool_without_call": dict(messages=[
        {"role": "user", "content": "Hi"},
        {"role": "tool", "tool_call_id": "x", "content": "orphan"},
    ], add_generation_prompt=True),
}


def string_content(template):
    """True when the template fails on a tool call's None content and renders
    it as "" (server/chat's NeedsStringContent: the server then passes "")."""
    def renders(content):
        return any(golden.render_probe(template, content, a) is not None
                   for a in (json.dumps(golden.PROBE_ARGS), golden.PROBE_ARGS))
    return not renders(None) and renders("")


def to_template_messages(messages, object_args, string_content):
    out = golden.to_template_messages(messages, object_args)
    for m, d in zip(messages, out):
        if m.get("reasoning_content"):
            d["reasoning_content"] = d["thinking"] = m["reasoning_content"]
        if string_content and d["content"] is None:
            d["content"] = ""
    return out


def main():
    tpath = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "..", "shared", "models", "templates-more", "openai-gpt-oss-120b.jinja")
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "server", "chat", "testdata", "golden-harmony.json")
    name = os.path.basename(tpath)[: -len(".jinja")]
    with open(tpath, encoding="utf-8") as f:
        source = f.read()
    template = golden.compile_template(source)
    str_content = string_content(template)
    obj_args = golden.object_arguments(template, "" if str_content else None)
    conversations = {**golden.CONVERSATIONS, **CONVERSATIONS}
    cases = golden.render_cases(name, template, conversations,
                                lambda m: to_template_messages(m, obj_args, str_content))
    golden.write_golden(out_path, "scripts/chat-template-golden-harmony.py", conversations=conversations,
                        templates={name: {"source": source, "object_arguments": obj_args,
                                          "string_content": str_content}},
                        cases=cases)
    errors = sum("error" in c for c in cases)
    print(f"{out_path}: {len(cases)} cases ({errors} raise)")

if __name__ == "__main__":
    main()
