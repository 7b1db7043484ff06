package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Message is one chat message in OpenAI's shape.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // an assistant's calls
	ToolCallID string     `json:"tool_call_id,omitempty"` // the call a tool message answers
	// Reasoning is an assistant's reasoning (reasoning_content on the
	// wire). Set, the template sees it as both reasoning_content (Qwen3's
	// templates read it) and thinking (gpt-oss's).
	Reasoning string `json:"reasoning_content,omitempty"`
	// StringContent renders an empty Content as "" beside tool calls too,
	// where it is otherwise None (Ollama's messages always have a string).
	StringContent bool `json:"-"`
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function" when empty
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Options are the template's variables besides the messages.
type Options struct {
	AddGenerationPrompt bool
	// ContinueFinalMessage leaves the last message open: the prompt ends
	// with its content, for the model to continue it (transformers'
	// continue_final_message; AddGenerationPrompt must be false).
	ContinueFinalMessage bool
	BOSToken, EOSToken   string
	// Tools are the request's tool definitions, each JSON-decoded or, to
	// keep the key order a template's tojson prints, a json.RawMessage.
	// Nil renders tools as None.
	Tools []any
	// Extra are chat_template_kwargs (enable_thinking, date_string…); a
	// json.RawMessage value keeps its key order. They cannot replace the
	// variables above.
	Extra map[string]any
	// Now is strftime_now's clock; time.Now when nil.
	Now func() time.Time
	// ToolDescriptions gives a tool's function without a description an
	// empty one, as llama.cpp's Jinja renders a missing one, where jinja2
	// raises (a server sets it where NeedsToolDescription).
	ToolDescriptions bool
}

// Template is a parsed chat template, safe for concurrent Render calls.
type Template struct {
	tpl *exec.Template
	// objectArguments: the template renders a tool call's arguments only
	// as an object (it applies tojson to them), so they are decoded.
	objectArguments bool
	// stringContent: the template fails on an assistant message with tool
	// calls whose content is None and renders it with "" (gpt-oss's and
	// Qwen3's test `"x" in message.content`).
	stringContent bool
	// toolDescription: the template fails on a tool without a description
	// and renders it with an empty one (gpt-oss's).
	toolDescription bool
}

// Parse parses a Jinja chat template (tokenizer_config.json's chat_template,
// GGUF's tokenizer.chat_template).
func Parse(src string) (t *Template, err error) {
	if strings.TrimSpace(src) == "" {
		return nil, ErrNoTemplate
	}
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("chat: parse template: %v", p)
		}
	}()
	tpl, err := exec.NewTemplate("chat_template", newConfig(), sourceLoader{fixSource(src)}, newEnvironment())
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // gonja's message repeats the whole source
		}
		return nil, fmt.Errorf("chat: parse template: %w", err)
	}
	if err := rewriteNodes(tpl.Root().Nodes); err != nil {
		return nil, fmt.Errorf("chat: parse template: %w", err)
	}
	t = &Template{tpl: tpl}
	t.probe()
	return t, nil
}

// Render renders messages into a prompt as transformers' apply_chat_template
// does with jinja2. The template sees each message as a dict with role and
// content, and name, tool_calls and tool_call_id only when set; an
// assistant message with tool calls and no content has content None (as
// OpenAI sends it). A tool call's arguments are the JSON text, or the
// decoded object (key order kept) for templates that print them with tojson,
// as llama.cpp decides. Any error is caused by the request: the template
// raised (*TemplateError) or failed on these messages, as Python would.
func (t *Template) Render(messages []Message, o Options) (string, error) {
	if t == nil {
		return "", ErrNoTemplate
	}
	if o.ContinueFinalMessage && o.AddGenerationPrompt {
		return "", errors.New("chat: continue_final_message and add_generation_prompt cannot both be set")
	}
	out, err := t.render(messages, o, t.objectArguments)
	if err != nil || !o.ContinueFinalMessage || len(messages) == 0 {
		return out, err
	}
	return continueFinal(out, messages[len(messages)-1].Content)
}

// continueFinal cuts a rendered chat after the final message's content, as
// transformers' apply_chat_template does for continue_final_message: at
// the last place the content (stripped of space) appears, keeping the
// content's leading space trimmed but its trailing space when the template
// kept it.
func continueFinal(out, final string) (string, error) {
	stripped := strings.TrimSpace(final)
	i := strings.LastIndex(out, stripped)
	if i < 0 {
		return "", errors.New("chat: continue_final_message: the final message does not appear in the rendered chat")
	}
	lead := strings.TrimLeftFunc(final, unicode.IsSpace)
	if strings.HasPrefix(out[i:], lead) {
		return out[:i+len(lead)], nil
	}
	return out[:i+len(stripped)], nil
}

func (t *Template) render(messages []Message, o Options, objectArgs bool) (string, error) {
	out, _, err := t.renderBudget(messages, o, objectArgs)
	return out, err
}

// renderBudget is render, returning also the budget the render had left.
func (t *Template) renderBudget(messages []Message, o Options, objectArgs bool) (out string, bud *budget, err error) {
	vars := map[string]any{}
	input := 0 // bytes
	for k, v := range o.Extra {
		if vars[k], err = toPy(v); err != nil {
			return "", bud, fmt.Errorf("chat: chat_template_kwargs %q: %w", k, err)
		}
		input += deepSize(vars[k])
	}
	var raised *TemplateError
	now := o.Now
	if now == nil {
		now = time.Now
	}
	msgs, err := messageValues(messages, objectArgs)
	if err != nil {
		return "", bud, err
	}
	tools, err := toolValues(o.Tools)
	if err != nil {
		return "", bud, err
	}
	if o.ToolDescriptions {
		describeTools(tools)
	}
	vars["messages"] = msgs
	vars["tools"] = tools
	vars["documents"] = none
	vars["add_generation_prompt"] = o.AddGenerationPrompt
	vars["bos_token"] = o.BOSToken
	vars["eos_token"] = o.EOSToken
	vars["raise_exception"] = fn(func(va *exec.VarArgs) *exec.Value {
		raised = &TemplateError{Message: pyStr(unwrap(va.First()))}
		return exec.AsValue(raised)
	})
	vars["strftime_now"] = fn(func(va *exec.VarArgs) *exec.Value {
		return exec.AsValue(strftime(now(), pyStr(unwrap(va.First()))))
	})

	bud = newBudget(input + deepSize(msgs) + deepSize(tools))
	defer func() {
		if p := recover(); p != nil {
			if se, ok := p.(*sizeError); ok {
				out, err = "", bud.tooBig(se)
				if !errors.As(err, new(*BudgetError)) {
					err = renderError(err)
				}
				return
			}
			out, err = "", fmt.Errorf("chat: render: %v", p)
		}
	}()
	bud.install(vars)
	var b strings.Builder
	err = t.tpl.Execute(&cappedWriter{w: &b, b: bud}, exec.NewContext(vars))
	out = b.String()
	switch {
	case bud.err != nil:
		return "", bud, bud.err
	case raised != nil:
		return "", bud, raised
	case err != nil:
		return "", bud, renderError(err)
	}
	return out, bud, nil
}
