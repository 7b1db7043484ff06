package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-llm/troupe/server/chat"
)

// checkRole refuses a role the chat routes do not know.
func checkRole(i int, role string) *apiError {
	switch role {
	case "system", "user", "assistant", "tool", "developer":
		return nil
	}
	return badRequest("messages", "messages[%d].role %q is not one of system, user, assistant, tool", i, role)
}

// noTemplate is the error of a chat request to a model without a usable
// chat template.
func (s *Server) noTemplate() *apiError {
	if errors.Is(s.tmplErr, chat.ErrNoTemplate) {
		return badRequest("messages", "this model has no chat template; start the server with --chat-template FILE, or use /v1/completions")
	}
	return badRequest("messages", "%v", s.tmplErr)
}

// renderInput is what a conversation is rendered from, whatever API it
// came in: the messages (their roles as the API has them), the tools as
// OpenAI's JSON, the template variables and generation-prompt switches.
type renderInput struct {
	msgs                []chat.Message
	tools               []json.RawMessage
	kwargs              map[string]json.RawMessage
	effort              *string
	addGenerationPrompt *bool
	continueFinal       bool
}

// render renders in with the chat template and tokenizes the text.
func (s *Server) render(in *renderInput) ([]int32, string, *apiError) {
	if s.template == nil {
		return nil, "", s.noTemplate()
	}
	if len(in.msgs) == 0 {
		return nil, "", badRequest("messages", "messages must not be empty")
	}
	msgs := make([]chat.Message, len(in.msgs))
	for i, m := range in.msgs {
		m.Role = s.templateRole(m.Role)
		m.StringContent = m.StringContent || s.template.NeedsStringContent()
		s.harmonyMessage(&m)
		msgs[i] = m
	}
	bos, eos := s.rt.SpecialTokens()
	o := chat.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos, ToolDescriptions: s.template.NeedsToolDescription()}
	for _, tool := range in.tools { // raw, so tojson keeps the client's key order
		o.Tools = append(o.Tools, tool)
	}
	if len(in.kwargs) > 0 {
		o.Extra = make(map[string]any, len(in.kwargs))
		for k, v := range in.kwargs {
			o.Extra[k] = v
		}
	}
	s.toolVariables(&o, in.tools)
	if e := s.setReasoningEffort(&o, in.effort); e != nil {
		return nil, "", e
	}
	if in.addGenerationPrompt != nil {
		o.AddGenerationPrompt = *in.addGenerationPrompt
	}
	if in.continueFinal {
		if in.addGenerationPrompt != nil && *in.addGenerationPrompt {
			return nil, "", badRequest("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true")
		}
		o.AddGenerationPrompt, o.ContinueFinalMessage = false, true
	}
	text, err := s.template.Render(msgs, o)
	var budget *chat.BudgetError
	switch {
	case errors.As(err, &budget):
		// The model file's template is at fault, not the request.
		s.cfg.Log.Error().Str("resource", budget.Resource).Int64("limit", budget.Limit).
			Msg("the model's chat template exceeded its render budget: the template in the model file (or --chat-template) is broken or hostile")
		return nil, "", internal(fmt.Errorf("the model's chat template exceeded its %s budget rendering this conversation; the template in the model file is at fault, not the request", budget.Resource))
	case err != nil:
		return nil, "", badRequest("messages", "chat template: %v", err)
	}
	ids, err := s.tokenizeText(text, bos == "" || !strings.HasPrefix(text, bos))
	if err != nil {
		return nil, "", tokenizeError("messages", "tokenizing the conversation", err)
	}
	if len(ids) == 0 {
		return nil, "", badRequest("messages", "the rendered conversation is empty")
	}
	return ids, text, nil
}
