// Package responses serves OpenAI's Responses API (POST /v1/responses,
// GET and DELETE /v1/responses/{id}, POST /v1/responses/input_tokens) on
// the request pipeline: it translates input items into a
// pipeline.Request and the pipeline's events into output items, or into
// the API's event stream (response.created … response.completed), and
// writes OpenAI's error shape. Responses with store (the default) are kept
// in a bounded in-memory Store, for previous_response_id and GET.
//
// Concurrency: a Handler is safe for concurrent use; the Store has its own
// lock.
package responses
