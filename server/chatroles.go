package server

import "strings"

// templateRole is the role a message is rendered with. OpenAI's newer
// clients send the system prompt as "developer"; a template that never
// names that role (it compares roles with 'developer' or "developer")
// would drop such a message or raise on it, so it gets "system", as
// llama.cpp maps it for every template but gpt-oss's.
func (s *Server) templateRole(role string) string {
	if role == "developer" && !strings.Contains(s.templateSrc, `'developer'`) && !strings.Contains(s.templateSrc, `"developer"`) {
		return "system"
	}
	return role
}
