package server

import (
	"encoding/json"

	"github.com/troupe-llm/troupe/messages"
)

// constrainedFields are the request fields that ask for output constrained
// to a format: OpenAI's response_format, vLLM's structured_outputs and
// guided_*, llama-server's grammar and json_schema. troupe cannot constrain
// decoding yet (model/grammar is built, not wired: issue 18), so a request
// that asks for it is a 400 that says so, never free text that ignores it.
type constrainedFields struct {
	ResponseFormat    json.RawMessage `json:"response_format"`
	StructuredOutputs json.RawMessage `json:"structured_outputs"`
	GuidedJSON        json.RawMessage `json:"guided_json"`
	GuidedRegex       json.RawMessage `json:"guided_regex"`
	GuidedChoice      json.RawMessage `json:"guided_choice"`
	GuidedGrammar     json.RawMessage `json:"guided_grammar"`
	Grammar           json.RawMessage `json:"grammar"`
	JSONSchema        json.RawMessage `json:"json_schema"`
}

// notYet is the params entry of a constrained-output field: a 400 when the
// body sets it to anything but null.
func notYet(name string, get func(*samplingFields) json.RawMessage) param {
	return param{name, func(f *samplingFields, _ *messages.GenerateRequest) *apiError {
		if v := get(f); len(v) > 0 && string(v) != "null" {
			return badRequest(name, "%s is not supported yet: troupe cannot constrain its output to a schema or grammar", name)
		}
		return nil
	}}
}

// applyResponseFormat accepts {"type": "text"} (the default) and refuses
// json_object and json_schema, which need constrained decoding, and any
// other type.
func applyResponseFormat(f *samplingFields, _ *messages.GenerateRequest) *apiError {
	if len(f.ResponseFormat) == 0 || string(f.ResponseFormat) == "null" {
		return nil
	}
	var rf struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(f.ResponseFormat, &rf); err != nil {
		return badRequest("response_format", "response_format must be an object with a type")
	}
	switch rf.Type {
	case "text":
		return nil
	case "json_object", "json_schema":
		return badRequest("response_format", "response_format type %q is not supported yet: troupe cannot constrain its output to JSON", rf.Type)
	}
	return badRequest("response_format", "response_format type %q: want text, json_object or json_schema", rf.Type)
}

// checkToolChoice accepts tool_choice "none" and "auto" (the tools are
// rendered into the prompt by the chat template; the model's calls come
// back as content) and refuses "required" and a named function, which
// troupe cannot guarantee without constrained decoding.
func checkToolChoice(v json.RawMessage) *apiError {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch s {
		case "none", "auto":
			return nil
		case "required":
			return badRequest("tool_choice", `tool_choice "required" is not supported yet: troupe cannot force a tool call`)
		}
		return badRequest("tool_choice", `tool_choice %q: want "none", "auto", "required" or a function`, s)
	}
	return badRequest("tool_choice", "tool_choice naming a function is not supported yet: troupe cannot force a tool call")
}
