package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// constrainedFields are the request fields that constrain the output to a
// format (pipeline.Formats). Each maps to one messages.Grammar; a request
// may set one of them.
type constrainedFields = pipeline.Formats

// constraint is one constrained-output field: its name and how its value
// (never empty or null) maps to a grammar.
type constraint struct {
	name  string
	get   func(*constrainedFields) json.RawMessage
	parse func(name string, v json.RawMessage) (*messages.Grammar, *apiError)
}

var constraints = []constraint{
	{"response_format", func(f *constrainedFields) json.RawMessage { return f.ResponseFormat }, responseFormat},
	{"structured_outputs", func(f *constrainedFields) json.RawMessage { return f.StructuredOutputs }, structuredOutputs},
	{"guided_json", func(f *constrainedFields) json.RawMessage { return f.GuidedJSON }, schemaGrammar},
	{"guided_regex", func(f *constrainedFields) json.RawMessage { return f.GuidedRegex }, textGrammar(messages.GrammarRegex)},
	{"guided_choice", func(f *constrainedFields) json.RawMessage { return f.GuidedChoice }, choiceGrammar},
	{"guided_grammar", func(f *constrainedFields) json.RawMessage { return f.GuidedGrammar }, textGrammar(messages.GrammarGBNF)},
	{"grammar", func(f *constrainedFields) json.RawMessage { return f.Grammar }, textGrammar(messages.GrammarGBNF)},
	{"json_schema", func(f *constrainedFields) json.RawMessage { return f.JSONSchema }, schemaGrammar},
}

// applyConstraint is the params entry of every constrained-output field:
// at most one may constrain the output (response_format text does not).
func applyConstraint(f *samplingFields, req *messages.GenerateRequest) *apiError {
	for _, c := range constraints {
		v := c.get(&f.Formats)
		if pipeline.IsNull(v) {
			continue
		}
		g, e := c.parse(c.name, v)
		if e != nil {
			return e
		}
		if g == nil {
			continue
		}
		if req.Grammar != nil {
			return badRequest(c.name, "%s and %s both constrain the output; set one of them", f.grammarParam, c.name)
		}
		req.Grammar, f.grammarParam = g, c.name
	}
	return nil
}

// responseFormat maps OpenAI's response_format: text (no constraint),
// json_object (with llama-server's schema, a schema), json_schema.
func responseFormat(name string, v json.RawMessage) (*messages.Grammar, *apiError) {
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
		Schema json.RawMessage `json:"schema"` // llama-server's
	}
	if err := json.Unmarshal(v, &rf); err != nil || rf.Type == "" {
		return nil, badRequest(name, `response_format must be an object with a type ("text", "json_object" or "json_schema")`)
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object", "json_schema":
		schema := rf.Schema
		if rf.JSONSchema != nil && !pipeline.IsNull(rf.JSONSchema.Schema) {
			schema = rf.JSONSchema.Schema
		}
		if rf.Type == "json_schema" && rf.JSONSchema == nil && pipeline.IsNull(schema) {
			return nil, badRequest(name, `response_format json_schema needs "json_schema": {"name": ..., "schema": {...}}`)
		}
		if pipeline.IsNull(schema) {
			return &messages.Grammar{Kind: messages.GrammarJSONObject}, nil
		}
		g, err := jsonFormatGrammar(schema)
		if err != nil {
			return nil, badRequest(name, "response_format: %v", err)
		}
		return g, nil
	case "structural_tag":
		return nil, badRequest(name, `response_format type "structural_tag" is not supported`)
	}
	return nil, badRequest(name, `response_format type %q: want "text", "json_object" or "json_schema"`, rf.Type)
}

// jsonFormatGrammar is the grammar of a JSON output: any JSON object when
// schema is empty, else the documents the schema accepts (a JSON Schema
// object, or a JSON string holding one, as vLLM's guided_json allows).
// Whether the schema is within the supported subset is the runtime's to
// say (Runtime.CompileGrammar). Ollama's format ("json" or a schema) maps
// here too.
func jsonFormatGrammar(schema json.RawMessage) (*messages.Grammar, error) {
	schema = bytes.TrimSpace(schema)
	if pipeline.IsNull(schema) {
		return &messages.Grammar{Kind: messages.GrammarJSONObject}, nil
	}
	if schema[0] == '"' {
		var s string
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, errors.New("the schema must be a JSON Schema object")
		}
		schema = bytes.TrimSpace([]byte(s))
		if !json.Valid(schema) {
			return nil, errors.New("the schema string is not JSON")
		}
	}
	if len(schema) == 0 || schema[0] != '{' && string(schema) != "true" {
		return nil, errors.New("the schema must be a JSON Schema object")
	}
	return &messages.Grammar{Kind: messages.GrammarJSONSchema, Source: string(schema)}, nil
}

func schemaGrammar(name string, v json.RawMessage) (*messages.Grammar, *apiError) {
	g, err := jsonFormatGrammar(v)
	if err != nil {
		return nil, badRequest(name, "%s: %v", name, err)
	}
	return g, nil
}

// textGrammar is a field holding a regex or a GBNF grammar as a string; an
// empty string sets nothing (clients send grammar: "").
func textGrammar(kind string) func(string, json.RawMessage) (*messages.Grammar, *apiError) {
	return func(name string, v json.RawMessage) (*messages.Grammar, *apiError) {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, badRequest(name, "%s: expected a string", name)
		}
		if s == "" {
			return nil, nil
		}
		return &messages.Grammar{Kind: kind, Source: s}, nil
	}
}

func choiceGrammar(name string, v json.RawMessage) (*messages.Grammar, *apiError) {
	var choices []string
	if err := json.Unmarshal(v, &choices); err != nil || len(choices) == 0 {
		return nil, badRequest(name, "%s: expected a non-empty list of strings", name)
	}
	b, _ := json.Marshal(choices)
	return &messages.Grammar{Kind: messages.GrammarChoice, Source: string(b)}, nil
}

// structuredOutputs maps vLLM's structured_outputs: one of json, regex,
// choice, grammar, json_object (structural_tag is not supported).
func structuredOutputs(name string, v json.RawMessage) (*messages.Grammar, *apiError) {
	var so struct {
		JSON          json.RawMessage `json:"json"`
		Regex         json.RawMessage `json:"regex"`
		Choice        json.RawMessage `json:"choice"`
		Grammar       json.RawMessage `json:"grammar"`
		JSONObject    *bool           `json:"json_object"`
		StructuralTag json.RawMessage `json:"structural_tag"`
	}
	if err := json.Unmarshal(v, &so); err != nil {
		return nil, badRequest(name, "structured_outputs must be an object with one of json, regex, choice, grammar, json_object")
	}
	if !pipeline.IsNull(so.StructuralTag) {
		return nil, badRequest(name, "structured_outputs.structural_tag is not supported")
	}
	var out *messages.Grammar
	var set []string
	for _, f := range []struct {
		key   string
		v     json.RawMessage
		parse func(string, json.RawMessage) (*messages.Grammar, *apiError)
	}{
		{"json", so.JSON, schemaGrammar},
		{"regex", so.Regex, textGrammar(messages.GrammarRegex)},
		{"choice", so.Choice, choiceGrammar},
		{"grammar", so.Grammar, textGrammar(messages.GrammarGBNF)},
	} {
		if pipeline.IsNull(f.v) {
			continue
		}
		g, e := f.parse(name+"."+f.key, f.v)
		if e != nil {
			e.Param = strp(name)
			return nil, e
		}
		if g != nil {
			out = g
			set = append(set, f.key)
		}
	}
	if so.JSONObject != nil && *so.JSONObject {
		out = &messages.Grammar{Kind: messages.GrammarJSONObject}
		set = append(set, "json_object")
	}
	if len(set) > 1 {
		return nil, badRequest(name, "structured_outputs sets %s; set one of them", strings.Join(set, " and "))
	}
	return out, nil
}

// checkGrammar has the runtime compile the request's grammar (cached), so
// that a schema outside the subset, a bad regex or GBNF is a 400 naming
// the field and the problem before the request is admitted.
// The compile stops when ctx ends (the client went away).
func (s *Server) checkGrammar(ctx context.Context, g *messages.Grammar, param string) *apiError {
	if g == nil {
		return nil
	}
	return grammarError(s.rt.CompileGrammarContext(ctx, g), param)
}

// choiceError is the API error of a choice that failed: a 400 naming the
// grammar's field when the request's grammar is at fault (it passed a
// bound some tokens in: c.Invalid), a 500 otherwise. Where output has
// been sent already (a stream) the choice ends with it as an event.
func (j *job) choiceError(c *messages.OutputChunk) *apiError {
	if c.Invalid && j.grammarParam != "" {
		return badRequest(j.grammarParam, "%s: the grammar failed during generation: %s", j.grammarParam, c.Err)
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: c.Err}
}

// grammarError is the API error of a grammar's compile or build: a 400
// naming param when the grammar is at fault (too complex included).
func grammarError(err error, param string) *apiError {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, actors.ErrInvalidRequest):
		return badRequest(param, "%s: %s", param, strings.TrimPrefix(err.Error(), actors.ErrInvalidRequest.Error()+": "))
	}
	return userError(err)
}
