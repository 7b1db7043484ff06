package openai

import (
	"fmt"
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// models serves GET /v1/models: the one served model.
func (h *Handler) models(w http.ResponseWriter, r *http.Request) {
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{h.modelObject()}})
}

// modelByID serves GET /v1/models/{id} (the SDKs' models.retrieve).
func (h *Handler) modelByID(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != h.run.Model() {
		WriteError(w, &pipeline.Error{Kind: pipeline.NotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist; this server serves %q", id, h.run.Model())})
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, h.modelObject())
}

func (h *Handler) modelObject() map[string]any {
	return map[string]any{"id": h.run.Model(), "object": "model", "created": 0, "owned_by": "troupe",
		"max_model_len": h.run.MaxModelLen()}
}
