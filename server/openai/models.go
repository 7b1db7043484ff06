package openai

import (
	"fmt"
	"net/http"

	"github.com/troupe-llm/troupe/server/pipeline"
)

// models serves GET /v1/models: the served model, once per name.
func (h *Handler) models(w http.ResponseWriter, r *http.Request) {
	var data []map[string]any
	for _, name := range h.run.Models() {
		data = append(data, h.modelObject(name))
	}
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// modelByID serves GET /v1/models/{id} (the SDKs' models.retrieve).
func (h *Handler) modelByID(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !h.run.Serves(id) {
		WriteError(w, &pipeline.Error{Kind: pipeline.NotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist; this server serves %q", id, h.run.Model())})
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, h.modelObject(id))
}

func (h *Handler) modelObject(name string) map[string]any {
	obj := map[string]any{"id": name, "object": "model", "created": 0, "owned_by": "troupe",
		"max_model_len": h.run.MaxModelLen()}
	if v, ok := h.run.(interface{ Vision() bool }); ok && v.Vision() { // a projector is loaded: images are taken
		obj["capabilities"] = []string{"completion", "vision"}
	}
	return obj
}
