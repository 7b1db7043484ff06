package toolcall

// fixture is a model's output in its family's format, written from what
// its chat template tells the model to emit, and what it parses to.
type fixture struct {
	name          string
	format        Format
	reasoningOpen bool
	in            string
	want          Result // ids other than the model's are not compared
}

func call(name, args string) Call { return Call{Name: name, Arguments: args} }

var fixtures = []fixture{
	// hermes / qwen: <tool_call>{json}</tool_call>
	{"hermes/one", Hermes, false,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		Result{Calls: []Call{call("get_weather", `{"city": "Paris"}`)}}},
	{"hermes/content+two", Hermes, false,
		"Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"x\": [1, 2]}, \"name\": \"b\"}\n</tool_call>",
		Result{Content: "Let me check.", Calls: []Call{call("a", `{}`), call("b", `{"x": [1, 2]}`)}}},
	{"hermes/qwen3 think", Hermes, false,
		"<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
		Result{Reasoning: "The user wants weather.", Calls: []Call{call("get_weather", `{"city": "Oslo"}`)}}},
	{"hermes/think open", Hermes, true,
		"hmm </think>Hello <b>there</b>",
		Result{Reasoning: "hmm", Content: "Hello <b>there</b>"}},
	{"hermes/call in think stays reasoning", Hermes, false,
		"<think>maybe <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call></think>no",
		Result{Reasoning: `maybe <tool_call>{"name": "a", "arguments": {}}</tool_call>`, Content: "no"}},
	{"hermes/arguments as string", Hermes, false,
		`<tool_call>{"name": "f", "arguments": "{\"a\": 1}"}</tool_call>`,
		Result{Calls: []Call{call("f", `{"a": 1}`)}}},
	{"hermes/malformed json", Hermes, false,
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call> after",
		Result{Content: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call> after"}},
	{"hermes/no name", Hermes, false,
		`<tool_call>{"arguments": {}}</tool_call>`,
		Result{Content: `<tool_call>{"arguments": {}}</tool_call>`}},
	{"hermes/unclosed", Hermes, false,
		`ok <tool_call>{"name": "f", "arguments": {"a": 1}}`,
		Result{Content: `ok <tool_call>{"name": "f", "arguments": {"a": 1}}`}},
	{"hermes/plain text with <", Hermes, false,
		"a < b and <tool_ c",
		Result{Content: "a < b and <tool_ c"}},

	// Qwen3-Coder, Qwen3.5, Nemotron 3 Nano
	{"qwen3_coder/one", Qwen3Coder, false,
		"I'll look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"unit\": \"C\"}\n</parameter>\n</function>\n</tool_call>",
		Result{Content: "I'll look.", Calls: []Call{call("get_weather", `{"city": "San Francisco", "days": 3, "opts": {"unit": "C"}}`)}}},
	{"qwen3_coder/no params", Qwen3Coder, false,
		"<tool_call>\n<function=now>\n</function>\n</tool_call>",
		Result{Calls: []Call{call("now", `{}`)}}},
	{"qwen3_coder/multiline string", Qwen3Coder, false,
		"<tool_call>\n<function=write>\n<parameter=text>\nline 1\nline 2\n</parameter>\n</function>\n</tool_call>",
		Result{Calls: []Call{call("write", `{"text": "line 1\nline 2"}`)}}},
	{"qwen3_coder/malformed", Qwen3Coder, false,
		"<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>",
		Result{Content: "<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>"}},

	// GLM-4.5/4.6
	{"glm45/one", GLM45, false,
		"<think>need data</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
		Result{Reasoning: "need data", Calls: []Call{call("get_weather", `{"city": "Beijing", "days": 2}`)}}},
	{"glm45/malformed", GLM45, false,
		"<tool_call>f\n<arg_key>a</arg_key>\n</tool_call>",
		Result{Content: "<tool_call>f\n<arg_key>a</arg_key>\n</tool_call>"}},

	// Llama 3.x
	{"llama3/json", Llama3JSON, false,
		`{"name": "get_weather", "parameters": {"city": "Rome"}}`,
		Result{Calls: []Call{call("get_weather", `{"city": "Rome"}`)}}},
	{"llama3/json typed", Llama3JSON, false,
		` {"type": "function", "name": "f", "parameters": {}}; {"name": "g", "parameters": {"x": 1}}`,
		Result{Calls: []Call{call("f", `{}`), call("g", `{"x": 1}`)}}},
	{"llama3/not a call", Llama3JSON, false,
		`{"answer": 42}`,
		Result{Content: `{"answer": 42}`}},
	{"llama3/json mid text is content", Llama3JSON, false,
		`Here: {"name": "f", "parameters": {}}`,
		Result{Content: `Here: {"name": "f", "parameters": {}}`}},
	{"llama3/truncated", Llama3JSON, false,
		`{"name": "f", "parameters": {"a": `,
		Result{Content: `{"name": "f", "parameters": {"a":`}},
	{"llama3/python_tag builtin", Llama3JSON, false,
		`<|python_tag|>brave_search.call(query="weather in Paris, today")`,
		Result{Calls: []Call{call("brave_search", `{"query": "weather in Paris, today"}`)}}},
	{"llama3/python_tag code", Llama3JSON, false,
		"<|python_tag|>print(1 + 1)",
		Result{Calls: []Call{call("python", `{"code": "print(1 + 1)"}`)}}},
	{"llama3/python_tag json", Llama3JSON, false,
		`<|python_tag|>{"name": "f", "parameters": {"a": "b"}}`,
		Result{Calls: []Call{call("f", `{"a": "b"}`)}}},
	{"llama3/python_tag bad json", Llama3JSON, false,
		`<|python_tag|>{"name": "f", "parameters": {`,
		Result{Content: `<|python_tag|>{"name": "f", "parameters": {`}},

	// Mistral
	{"mistral/nemo array", Mistral, false,
		`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lyon"}, "id": "abcDEF123"}, {"name": "b", "arguments": {}}]`,
		Result{Calls: []Call{{ID: "abcDEF123", Name: "get_weather", Arguments: `{"city": "Lyon"}`}, call("b", `{}`)}}},
	{"mistral/v11 name args", Mistral, false,
		`Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Nice"}[TOOL_CALLS]b[ARGS]{}`,
		Result{Content: "Sure.", Calls: []Call{call("get_weather", `{"city": "Nice"}`), call("b", `{}`)}}},
	{"mistral/small 3.2 call id", Mistral, false,
		`[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Nice"}`,
		Result{Calls: []Call{{ID: "a1b2c3d4e", Name: "get_weather", Arguments: `{"city": "Nice"}`}}}},
	{"mistral/ministral think, calls without repeat", Mistral, false,
		`[THINK]plan it[/THINK][TOOL_CALLS]a[ARGS]{"x": 1}b[ARGS]{"y": 2}`,
		Result{Reasoning: "plan it", Calls: []Call{call("a", `{"x": 1}`), call("b", `{"y": 2}`)}}},
	{"mistral/content after call", Mistral, false,
		`[TOOL_CALLS]a[ARGS]{"x": 1} done`,
		Result{Content: "done", Calls: []Call{call("a", `{"x": 1}`)}}},
	{"mistral/malformed args", Mistral, false,
		`[TOOL_CALLS]a[ARGS]{"x": 1]`,
		Result{Content: `[TOOL_CALLS]a[ARGS]{"x": 1]`}},
	{"mistral/bad name", Mistral, false,
		`[TOOL_CALLS]not a name[ARGS]{}`,
		Result{Content: `[TOOL_CALLS]not a name[ARGS]{}`}},
	{"mistral/empty", Mistral, false,
		`text [TOOL_CALLS]`,
		Result{Content: `text [TOOL_CALLS]`}},

	// gpt-oss harmony
	{"openai/analysis+call", OpenAI, false,
		`<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "SF"}<|call|>`,
		Result{Reasoning: "Need weather.", Calls: []Call{call("get_weather", `{"city": "SF"}`)}}},
	{"openai/recipient in role", OpenAI, false,
		`<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>`,
		Result{Reasoning: "x", Calls: []Call{call("f", `{}`)}}},
	{"openai/final", OpenAI, false,
		`<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>The answer is 4.`,
		Result{Reasoning: "think", Content: "The answer is 4."}},
	{"openai/bad args", OpenAI, false,
		`<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": <|call|>`,
		Result{Content: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": <|call|>`}},

	// Kimi K2
	{"kimi_k2/two", KimiK2, false,
		`Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Tokyo"}<|tool_call_end|><|tool_call_begin|>functions.now:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>`,
		Result{Content: "Checking.", Calls: []Call{{ID: "functions.get_weather:0", Name: "get_weather", Arguments: `{"city": "Tokyo"}`}, {ID: "functions.now:1", Name: "now", Arguments: `{}`}}}},
	{"kimi_k2/malformed", KimiK2, false,
		`<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0{"a":1}<|tool_call_end|><|tool_calls_section_end|>`,
		Result{Content: `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0{"a":1}<|tool_call_end|><|tool_calls_section_end|>`}},

	// DeepSeek
	{"deepseek_r1/one", DeepSeekR1, true,
		"Weather needed.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		Result{Reasoning: "Weather needed.", Calls: []Call{call("get_weather", `{"city": "Paris"}`)}}},
	{"deepseek_r1/no section end", DeepSeekR1, false,
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜tool▁call▁end｜>",
		Result{Calls: []Call{call("f", `{}`)}}},
	{"deepseek_v31/two", DeepSeekV31, false,
		`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>b<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
		Result{Calls: []Call{call("get_weather", `{"city": "Paris"}`), call("b", `{}`)}}},
	{"deepseek_v31/malformed", DeepSeekV31, false,
		`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{oops}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
		Result{Content: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{oops}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`}},

	// functionary
	{"functionary_v3/all+call", FunctionaryV3, false,
		"all\nLet me check.>>>get_weather\n{\"city\": \"Bern\"}>>>b\n{}",
		Result{Content: "Let me check.", Calls: []Call{call("get_weather", `{"city": "Bern"}`), call("b", `{}`)}}},
	{"functionary_v3/call only", FunctionaryV3, false,
		"get_weather\n{\"city\": \"Bern\"}",
		Result{Calls: []Call{call("get_weather", `{"city": "Bern"}`)}}},
	{"functionary_v3/python", FunctionaryV3, false,
		"python\nprint(2)",
		Result{Calls: []Call{call("python", `{"code": "print(2)"}`)}}},
	{"functionary_v3/no recipient", FunctionaryV3, false,
		"Hello there, >>> is an operator",
		Result{Content: "Hello there, >>> is an operator"}},
	{"functionary_v3.1/function tag", Functionary31, false,
		`Ok <function=get_weather>{"city": "Oslo"}</function><function=b>{}</function>`,
		Result{Content: "Ok", Calls: []Call{call("get_weather", `{"city": "Oslo"}`), call("b", `{}`)}}},
	{"functionary_v3.1/malformed", Functionary31, false,
		`<function=f>{"a": </function>`,
		Result{Content: `<function=f>{"a": </function>`}},

	// firefunction v2
	{"firefunction_v2/two", FireFunction2, false,
		` functools[{"name": "get_weather", "arguments": {"city": "Lima"}}, {"name": "b", "arguments": {}}]`,
		Result{Calls: []Call{call("get_weather", `{"city": "Lima"}`), call("b", `{}`)}}},
	{"firefunction_v2/malformed", FireFunction2, false,
		`functools[{"name": "f"`,
		Result{Content: `functools[{"name": "f"`}},

	// command-r7b
	{"command_r7b/think+action", CommandR7B, false,
		"<|START_THINKING|>I will call it.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Kyiv\"}}\n]<|END_ACTION|>",
		Result{Reasoning: "I will call it.", Calls: []Call{call("get_weather", `{"city": "Kyiv"}`)}}},
	{"command_r7b/response", CommandR7B, false,
		"<|START_RESPONSE|>Hi there.<|END_RESPONSE|>",
		Result{Content: "Hi there."}},

	// granite
	{"granite/3.x", Granite, false,
		`<|tool_call|>[{"name": "f", "arguments": {"a": 1}}]`,
		Result{Calls: []Call{call("f", `{"a": 1}`)}}},
	{"granite/4.0 hermes", Granite, false,
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
		Result{Calls: []Call{call("f", `{}`)}}},

	// gemma 4
	{"gemma4/thought+call", Gemma4, false,
		"<|channel>thought\nWeather tool.<channel|><|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,opts:{metric:true,tags:[<|\"|>a<|\"|>,2]}}<tool_call|>",
		Result{Reasoning: "Weather tool.", Calls: []Call{call("get_weather", `{"city": "Paris, FR", "days": 3, "opts": {"metric": true, "tags": ["a", 2]}}`)}}},
	{"gemma4/no args", Gemma4, false,
		"Sure.<|tool_call>call:now{}<tool_call|>",
		Result{Content: "Sure.", Calls: []Call{call("now", `{}`)}}},
	{"gemma4/malformed", Gemma4, false,
		"<|tool_call>call:f{a:<|\"|>x}<tool_call|>",
		Result{Content: "<|tool_call>call:f{a:<|\"|>x}<tool_call|>"}},

	// LFM2 / LFM2.5 (Python calls)
	{"lfm2/two", LFM2, false,
		`<think>two calls</think><|tool_call_start|>[get_weather(city="Paris", days=2), search(q='it\'s', strict=True, tags=["a", None])]<|tool_call_end|>Done.`,
		Result{Reasoning: "two calls", Content: "Done.", Calls: []Call{call("get_weather", `{"city": "Paris", "days": 2}`), call("search", `{"q": "it's", "strict": true, "tags": ["a", null]}`)}}},
	{"lfm2/malformed", LFM2, false,
		`<|tool_call_start|>[get_weather(city=Paris)]<|tool_call_end|>`,
		Result{Content: `<|tool_call_start|>[get_weather(city=Paris)]<|tool_call_end|>`}},

	// Command R+
	{"command_r_plus/action", CommandRPlus, false,
		"Action: ```json\n[\n    {\n        \"tool_name\": \"internet_search\",\n        \"parameters\": {\"query\": \"weather\"}\n    }\n]\n```",
		Result{Calls: []Call{call("internet_search", `{"query": "weather"}`)}}},
	{"command_r_plus/prose", CommandRPlus, false,
		"Action: none needed. Action:",
		Result{Content: "Action: none needed. Action:"}},

	{"mistral/trailing marker", Mistral, false,
		`[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]`,
		Result{Content: "[TOOL_CALLS]", Calls: []Call{call("a", `{}`)}}},

	// no format
	{"none/text", None, false, "  <tool_call>{} is just text  ", Result{Content: "<tool_call>{} is just text"}},
}
