#!/usr/bin/env python3
"""Writes server/chat/testdata/golden.json, the reference server/chat's Go
renderer must equal byte for byte:
  - cases (TestGolden): every chat template in ../shared/models/templates
    rendered by Python's jinja2 on a fixed set of conversations;
  - constructs (TestConstructs): small templates, one or a few jinja2
    constructs each, rendered on a two-message conversation.

The environment mirrors transformers' apply_chat_template
(transformers/utils/chat_template_utils.py): an ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks, jinja2.ext.loopcontrols and the {% generation
%} tag of transformers' AssistantTracker (here without its index tracking);
the tojson filter replaced by json.dumps(ensure_ascii=False, indent,
separators, sort_keys); globals raise_exception (TemplateError) and
strftime_now, here on a fixed clock (FIXED_NOW). Render variables: messages,
tools (None when the request has none), documents=None, add_generation_prompt,
bos_token, eos_token and the conversation's chat_template_kwargs.

Conversations are stored in OpenAI's wire shape; to_template_messages turns
them into the dicts a template sees, by the rules server/chat documents:
  - optional keys (name, tool_calls, tool_call_id) are absent when unset;
  - an assistant message with tool calls and empty content gets content None
    (OpenAI sends null there, and the DeepSeek-R1 templates test `is none`);
  - tool-call arguments (a JSON string on the wire) stay a string unless the
    template renders only object arguments, found as llama.cpp's minja does:
    render a probe tool call both ways and look for the argument's key
    (object_arguments below); then they are the decoded object, key order kept.

Usage: python3 scripts/chat-template-golden.py [templates-dir] [out-file]
       (defaults: ../shared/models/templates, server/chat/testdata/golden.json,
       both relative to the repository root). Needs only jinja2 (3.1.6 used).
"""

import datetime
import glob
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2024, 9, 5, 14, 30, 15)
BOS, EOS = "<s>", "</s>"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city, in °C or °F",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and country, e.g. Zürich, CH"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius",
                         "description": "Temperature unit"},
                "days": {"type": "integer", "description": "Days to forecast", "minimum": 1, "maximum": 7},
            },
            "required": ["location"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "sites": {"type": "array", "items": {"type": "string"}, "description": "Sites to search"},
                "threshold": {"type": "number", "default": 1.0, "description": "Minimum score"},
                "safe": {"type": "boolean"},
            },
            "required": ["query", "sites"],
        },
    },
}

# firefunction-v2's template needs these two variables (Fireworks passes them).
FIREWORKS_KWARGS = {
    "functions": json.dumps([WEATHER_TOOL["function"], SEARCH_TOOL["function"]], ensure_ascii=False),
    "datetime": "2024-09-05",
}

CALL = {"id": "call12345", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"location": "Zürich, CH", "unit": "celsius", "days": 2}'}}
CALL2 = {"id": "call67890", "type": "function",
         "function": {"name": "search", "arguments": '{"query": "fondue", "sites": ["a.ch", "b.ch"], "threshold": 0.5}'}}

# Each conversation: messages in OpenAI's wire shape, tools (None or a list of
# tool definitions), add_generation_prompt and chat_template_kwargs.
CONVERSATIONS = {
    "system_user": dict(messages=[
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
    ], add_generation_prompt=True),
    "user_only": dict(messages=[
        {"role": "user", "content": "Hello!"},
    ], add_generation_prompt=True),
    "multi_turn": dict(messages=[
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nSimple arithmetic.\n</think>\n\n2+2 is 4."},
        {"role": "user", "content": "And 3+3?", "name": "alice"},
        {"role": "assistant", "content": "3+3 is 6."},
    ], add_generation_prompt=False),
    "system_multi_turn": dict(messages=[
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Name a color."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another one?"},
    ], add_generation_prompt=True),
    "non_ascii": dict(messages=[
        {"role": "user", "content": "Grüß dich! 你好 🌍 — «quotes» \"double\" 'single' \\ back\tslash <b>&amp;</b>"},
        {"role": "assistant", "content": "Привет! こんにちは ✓"},
        {"role": "user", "content": "Ça va? ñ é ß"},
    ], add_generation_prompt=True),
    "whitespace": dict(messages=[
        {"role": "system", "content": "\n  Be terse.  \n"},
        {"role": "user", "content": "   leading and trailing   \n\n"},
        {"role": "assistant", "content": "\n\nline one\n  line two\n"},
        {"role": "user", "content": "\tTabbed\r\nwindows line\n"},
    ], add_generation_prompt=False),
    "empty": dict(messages=[
        {"role": "user", "content": ""},
        {"role": "assistant", "content": " "},
        {"role": "user", "content": "\n"},
    ], add_generation_prompt=True),
    "not_alternating": dict(messages=[
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ], add_generation_prompt=True),
    "tools": dict(messages=[
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call12345", "content": '{"temperature": 21.5, "condition": "sunny"}'},
        {"role": "assistant", "content": "It is 21.5 °C and sunny."},
        {"role": "user", "content": "Thanks! Now search for fondue."},
    ], tools=[WEATHER_TOOL, SEARCH_TOOL], add_generation_prompt=True, chat_template_kwargs=FIREWORKS_KWARGS),
    "tool_pending": dict(messages=[
        {"role": "user", "content": "Search fondue and check the weather."},
        {"role": "assistant", "content": "", "tool_calls": [CALL2]},
        {"role": "tool", "tool_call_id": "call67890", "content": "3 results"},
    ], tools=[SEARCH_TOOL, WEATHER_TOOL], add_generation_prompt=True),
    "parallel_calls": dict(messages=[
        {"role": "user", "content": "Both please."},
        {"role": "assistant", "content": "Calling both.", "tool_calls": [CALL, CALL2]},
        {"role": "tool", "tool_call_id": "call12345", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call67890", "content": "none found"},
    ], tools=[WEATHER_TOOL, SEARCH_TOOL], add_generation_prompt=True),
    "kwargs": dict(messages=[
        {"role": "system", "content": "You are a bot."},
        {"role": "user", "content": "Hi"},
    ], add_generation_prompt=True,
        chat_template_kwargs={"date_string": "01 Jan 2025", "enable_thinking": False, "tools_in_user_message": False,
                              **FIREWORKS_KWARGS}),
}

# Constructs: each renders with messages [user "  hi  ", assistant "yo"], no
# tools. Most print several results in one line.
CONSTRUCT_MESSAGES = [{"role": "user", "content": "  hi  "}, {"role": "assistant", "content": "yo"}]
CONSTRUCTS = [
    # None, Undefined and printing
    r"{{ none }}|{{ undefined_thing }}|{{ None }}|{{ documents }}|{{ tools is none }}{{ tools is defined }}",
    r"{% set x = none %}{{ x is defined }}{{ x is none }}{{ y is defined }}",
    r"{{ {'a': 1, 'b': [1, 2.5, 'x'], 'c': none} }}|{{ [1, 'a', none, true] }}|{{ ('a', 'b') }}{{ (1,) }}{{ () }}",
    r"""{{ "it's" }}|{{ ["it's", 'a"b', 'both\'"'] }}|{{ ['\n\t\\'] }}|{{ ['é', '\x85'] }}""",
    r"{{ {'b': 1}|string }}|{{ [1,2]|string }}|{{ 'a' ~ none ~ 1 ~ undefined_thing }}",
    r"{{ 1.0 }} {{ 1e20 }} {{ 0.00001 }} {{ 3.14159 }} {{ 1/3 }} {{ 10/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }}",
    r"{{ 1.5e300*1e10 }} {{ 123456789012345678 }} {{ 0.1+0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 12345.678 }}",
    r"{{ -1 }}{{ -(1+2) }}{{ +3 }}{{ 2 * 3 + 1 }}{{ 2 ** 3 ** 2 }}{{ 10 - 2 - 3 }}{{ 'a' * 3 }}",
    # operators
    r"{{ 'a' + 'b' }}{{ 1 + 2 }}{{ 1 + 2.0 }}{{ [1] + [2] }}{{ true + 1 }}{{ ('a', 'b') + ('c',) }}",
    r"{{ 'x' + 1 }}",
    r"{{ 'x' + none }}",
    r"{{ 'x' + undefined_thing }}",
    r"{{ [1,2] + (3,) }}",
    r"{{ {'a':1} + {'b':2} }}",
    r"{{ 1 < 'a' }}",
    r"{{ 1 < 2 }}{{ 'a' < 'b' }}{{ 2 >= 2 }}{{ 1 == 1.0 }}{{ 'a' == 'a' }}{{ [1] == [1] }}{{ none == none }}{{ 1 != 2 }}",
    r"{{ 3 > 2 > 1 }}",
    r"{{ 1 < 2 and 2 < 3 }}{{ not true or false }}{{ 0 or 'x' }}{{ '' and 'y' }}",
    r"{{ 'a' in 'cat' }}{{ 1 in [1,2] }}{{ 'k' in {'k': 1} }}{{ 'z' not in {'k': 1} }}",
    r"{% if {} %}T{% else %}F{% endif %}{% if [] %}T{% else %}F{% endif %}{% if {'a':1} %}T{% endif %}{{ not {} }}{{ {} }}{{ [] }}",
    r"{{ 'y' if x else 'n' }}{{ 'y' if true }}|{{ 'a' if none }}|{{ raise_exception('x') if false else 'fine' }}",
    r"{{ '%s-%d %05.2f %x %r %%'|format('a', 1, 3.14159, 255, 'q') }}|{{ '%(n)s'|format(n=1) }}|{{ '%s and %s' % ('a', 'b') }}|{{ '{} {name}'.format(1, name='x') }}",
    r"{{ '}' + (', ' if not false else '') }}|{{ [1 if true else 2, 3 if false else 4, 5 if false] }}|{{ {'k': 'v' if true else 'w'} }}|{{ 'abc'|replace('a' if true else 'b', 'x') }}|{{ (undefined_thing.x if undefined_thing is defined else 'safe') }}|{{ 1 + (2 if false else 3 if true else 4) }}",
    "{{ 'x' ~ ('a'\n    if messages\n    else 'b') }}\n{{ raise_exception('line 4') if messages|length > 1 }}",
    # lookups
    r"{{ messages[0].content }}{{ messages[0]['role'] }}{{ messages|length }}{{ messages[-1].content|trim }}{{ messages[0] }}",
    r"{{ {'a': {'b': 1}}.a.b }}{{ {'items': 1}['items'] }}{{ {'x': 1}.get('y', 'd') }}{{ {'x': 1}.get('y') }}{{ {'x': 1}.get('x') }}",
    r"{{ {'a': none}.a is none }}{{ {'a': none}.a is defined }}{{ {'a': none}['a'] }}{{ none.attr is defined }}",
    r"{{ 'a' if messages[5] is defined else 'b' }}{{ messages[5].x is defined }}",
    r"{{ undefined_thing.attr }}",
    r"{{ [1,2,3][-1] }}{{ [1][-1] }}{{ 'abc'[-1] }}{{ [1,2,3][::-1] }}{{ 'héllo'[1:3] }}{{ 'abc'[0:-1] }}{{ [1,2,3][1:] }}{{ [0,1,2,3,4][::2] }}",
    r"{{ messages|last|attr('role') }}{{ (messages|first).role }}",
    # tojson
    r"{{ {'b': 1, 'a': [1, {'z': 2}]}|tojson }}|{{ {'b': 1, 'a': [1, {}]}|tojson(indent=2) }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}",
    r"""{{ 'é"\n'|tojson }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ {'a':1}|tojson(separators=(',', ':')) }}|{{ [1, [2, [3]]]|tojson(indent=2) }}""",
    r"""{{ 'x\ty'|tojson }}{{ '\u2028'|tojson }}{{ '\x7f\x01'|tojson }}{{ 'a\'b'|tojson }}{{ messages[0]|tojson }}""",
    r"{{ (1,2)|tojson }}{{ none|tojson }}{{ true|tojson }}{{ 1.5|tojson }}{{ 100|tojson }}{{ [1,2]|map('string')|list|tojson }}",
    r"{{ undefined_thing|tojson }}",
    r"{{ [1,2]|map('string')|tojson }}",
    # string methods and escapes
    r"{{ '  a b  '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'x'.startswith(('a','x')) }}|{{ 'Hello World'.lower().title() }}",
    r"{{ 'aXbX'.replace('X','-') }}|{{ 'abc'.upper() }}|{{ 'a\nb'.splitlines() }}|{{ '--a--'.strip('-') }}|{{ 'a b'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'abc'.find('c') }}",
    r"{{ 'é'|upper }}{{ 'ß'.upper() }}{{ 'İ'.lower()|length }}{{ 'ß'|capitalize }}{{ 'hello big-world (x)'|title }}",
    r"{{ 'abc'.split('') }}",
    r"""{{ 'a\\' }}|{{ ['\\', 'x\\n', '\d'] }}|{{ 'q\'s' }}|{{ "d\"q" }}|{{ '\x41\u00e9' }}""",
    "{{ 'line one \\\ncontinued' }}",
    r"{% raw %}{{ '\\' }}{% endraw %}{# '\\' #}{{ '}}' }}",
    # filters
    r"{{ [1,2,3]|join(', ') }}|{{ 'a\n\nb\nc'|indent(2) }}|{{ 'a\n\nb'|indent(2, true, true) }}|{{ 'ab\ncd'|replace('\n', ' ') }}{{ 'aaa'|replace('a', 'b', 2) }}",
    r"{{ range(3)|list }}|{{ ['a','A','b']|unique|list }}|{{ ['a','b']|map('upper')|list }}|{{ [1,2,3,4]|select('odd')|list }}|{{ [1,2,3,4]|reject('even')|list }}",
    r"{{ [1,2]|map('string')|join }}{{ [{'a':1},{'a':2}]|map(attribute='a')|list }}{{ [{'a':1},{'b':2}]|selectattr('a', 'defined')|list }}",
    r"{{ messages|selectattr('role', 'equalto', 'user')|list|length }}{{ messages|rejectattr('role', 'in', ['user'])|map(attribute='content')|first }}{{ messages|map(attribute='role')|join(',') }}",
    r"{{ 'abc'|length }}{{ [1,2]|length }}{{ {'a':1}|length }}{{ undefined_thing|length }}{{ 'x'|first }}{{ [3,4]|last }}",
    r"{{ 'a' | default('b') }}{{ undefined_thing | default('b') }}{{ none | default('b') }}{{ '' | default('b', true) }}{{ messages[0].missing|default('m') }}",
    r"{{ 5|float }}{{ '3'|int + 1 }}{{ -3|abs }}{{ 2.5|round }}{{ 3.14159|round(2) }}{{ 2.1|round(0, 'ceil') }}",
    r"{{ ['b','a']|sort|list }}{{ [3,1,2]|sort|join(',') }}{{ [3,1,2]|max }}{{ [3,1,2]|min }}{{ [1,2,3]|sum }}",
    r"{{ {'b':2,'A':1,'a':3}|dictsort }}{{ {'b':2,'a':1}|dictsort(by='value', reverse=true) }}{{ {'a': 1}.items()|list }}{{ {'a': 1}.keys()|list }}",
    r"{{ 'x'|safe + '<b>' }}{{ '<a>' ~ 'x'|safe }}{{ '<'|e }}",
    r"{{ 'a b c'|wordcount }}{{ 'abc'|center(7) }}|{{ [1,2,3,4,5]|batch(2)|list }}",
    # tests
    r"{{ 1 is number }}{{ true is number }}{{ 1.0 is integer }}{{ 'a' is string }}{{ none is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 'x' is iterable }}{{ 1 is iterable }}{{ x is iterable }}",
    r"{{ [] is sequence }}{{ {} is sequence }}{{ 3 is odd }}{{ 4 is even }}{{ 6 is divisibleby 3 }}{{ 'ABC' is upper }}{{ 'abc' is lower }}",
    # statements
    r"{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}/{% endfor %}{% for m in messages %}{{ loop.index }}{{ loop.revindex }}{{ loop.length }}{{ loop.first }}{{ loop.last }}{% endfor %}",
    r"{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}{% for a, b in [('x', 'y')] %}{{ a }}{{ b }}{% endfor %}",
    r"{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}{% for m in messages if m.role == 'user' %}{{ m.content }}{% endfor %}",
    r"{% for x in none %}{% endfor %}",
    r"{% for x in undefined_thing %}{{ x }}{% else %}empty{% endfor %}",
    r"{% macro m(a, b='x', c=none) %}[{{ a }}|{{ b }}|{{ c }}|{{ a is defined }}]{% endmacro %}{{ m(1) }}{{ m() }}{{ m(1, 2, 3) }}{{ m(1, c=5) }}",
    r"{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}",
    r"{% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{% set ns.b = 'x' %}{{ ns.a }}{{ ns.b }}{{ ns.c is defined }}{% set c = namespace(v=[]) %}{% set c.v = c.v + [1] %}{{ c.v }}",
    r"{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}{% for i in [1] %}{% set x = 3 %}{% endfor %}{{ x }}",
    r"{% set x %}  block {{ 1 }}  {% endset %}[{{ x }}]{% filter upper %}up{{ 'x' }}{% endfilter %}{% generation %}gen{{ 1 }}{% endgeneration %}",
    r"{{ strftime_now('%Y-%m-%d %H:%M:%S %a %A %b %B %j %p %I %y %%') }}",
    r"{{ raise_exception('boom ' ~ 1) }}",
    # whitespace control
    "  {%- if true -%}  X  {%- endif -%}  \n  {% if true %}\n  Y\n  {% endif %}\n{{- ' Z ' -}}\n  {# c #}\nW",
    "{{ x }}  {% if true %}A{% endif %}  {# c #}  B\n  {% if true %}\nC{% endif %}",
    "a {{ 1 }} {% for i in [1,2] %} {{ i }} {% endfor %} z",
    "{% if true %}  \n  x{% endif %}\n  {%+ if true %}y{% endif %}\n\t{%- if true %}z{% endif %}",
    "  {% set a = 1 %}\n{{ a }}\n  {% macro f() %}\n  body\n  {% endmacro %}\n{{ f() }}|",
    "{%- for m in messages -%}\n  {{ m.role }}\n{%- endfor %}\n",
    "line\r\nwindows\r{{ 1 }}\n\n",
]

PROBE_TOOLS = [{"type": "function", "function": {
    "name": "ipython", "description": "Runs code",
    "parameters": {"type": "object", "properties": {"code": {"type": "string", "description": "The code"}},
                   "required": ["code"]}}}]
PROBE_ARGS = {"argument_needle": "print('Hello, World!')"}


class AssistantTracker(Extension):
    """transformers' {% generation %} tag, rendering only."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' filter: jinja's own escapes HTML characters.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise TemplateError(message)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                       extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def render(template, messages, tools=None, add_generation_prompt=False, kwargs=None, bos=BOS, eos=EOS):
    variables = dict(kwargs or {})
    variables.update(messages=messages, tools=tools, documents=None,
                     add_generation_prompt=add_generation_prompt, bos_token=bos, eos_token=eos)
    return template.render(**variables)


ARGUMENT_MARKS = ('"argument_needle":', "'argument_needle':")


def render_probe(template, content, arguments):
    """The template's rendering of one ipython call with these arguments and
    the assistant's content, or None where it raises."""
    messages = [
        {"role": "user", "content": "Hey"},
        {"role": "assistant", "content": content, "tool_calls": [
            {"id": "call00001", "type": "function", "function": {"name": "ipython", "arguments": arguments}}]},
    ]
    try:
        return render(template, messages, tools=PROBE_TOOLS, bos="", eos="")
    except Exception:
        return None


def object_arguments(template, content=None, marks=ARGUMENT_MARKS):
    """True when the template renders a tool call's arguments only as an object
    (the probe call's content is content; marks show the arguments rendered)."""
    def renders(arguments):
        out = render_probe(template, content, arguments)
        return out is not None and any(m in out for m in marks)
    return not renders(json.dumps(PROBE_ARGS)) and renders(PROBE_ARGS)


def to_template_messages(messages, object_args):
    out = []
    for m in messages:
        d = {"role": m["role"], "content": m["content"]}
        if m.get("name"):
            d["name"] = m["name"]
        if m.get("tool_calls"):
            if d["content"] == "":
                d["content"] = None
            calls = []
            for c in m["tool_calls"]:
                args = c["function"]["arguments"]
                if object_args:
                    args = json.loads(args)
                calls.append({"id": c["id"], "type": c["type"],
                              "function": {"name": c["function"]["name"], "arguments": args}})
            d["tool_calls"] = calls
        if m.get("tool_call_id"):
            d["tool_call_id"] = m["tool_call_id"]
        out.append(d)
    return out


def outcome(render_it):
    """{"expected": render_it()}, or the error it raises: the Go renderer must fail too."""
    try:
        return {"expected": render_it()}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def render_cases(name, template, conversations, to_messages):
    """One case per conversation: the template's rendering of its messages
    (through to_messages) or the error it raises."""
    return [{"template": name, "conversation": conv_id, **outcome(lambda: render(
        template, to_messages(conv["messages"]), tools=conv.get("tools"),
        add_generation_prompt=conv["add_generation_prompt"], kwargs=conv.get("chat_template_kwargs")))}
        for conv_id, conv in conversations.items()]


def write_golden(out_path, script, note="", **fields):
    """Writes a golden file: the script that made it, jinja2's version and
    note; the tokens and clock of the render; then fields in order."""
    golden = {"generator": f"{script}, jinja2 {jinja2.__version__}{note}",
              "bos_token": BOS, "eos_token": EOS, "now": FIXED_NOW.isoformat(), **fields}
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "..", "shared", "models", "templates")
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "server", "chat", "testdata", "golden.json")

    templates, cases = {}, []
    for path in sorted(glob.glob(os.path.join(tdir, "*.jinja"))):
        name = os.path.basename(path)[: -len(".jinja")]
        with open(path, encoding="utf-8") as f:
            source = f.read()
        template = compile_template(source)
        obj_args = object_arguments(template)
        templates[name] = {"source": source, "object_arguments": obj_args}
        cases += render_cases(name, template, CONVERSATIONS, lambda m: to_template_messages(m, obj_args))
    constructs = [{"source": source, **outcome(lambda: render(compile_template(source), CONSTRUCT_MESSAGES))}
                  for source in CONSTRUCTS]

    write_golden(out_path, "scripts/chat-template-golden.py", conversations=CONVERSATIONS, templates=templates,
                 cases=cases, construct_messages=CONSTRUCT_MESSAGES, constructs=constructs)
    errors = sum("error" in c for c in cases)
    print(f"{out_path}: {len(templates)} templates x {len(CONVERSATIONS)} conversations = "
          f"{len(cases)} cases ({errors} raise); {len(constructs)} constructs")


if __name__ == "__main__":
    main()
