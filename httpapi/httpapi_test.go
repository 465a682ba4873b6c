package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// spec is the parsed OpenAPI document.
type spec struct {
	Paths map[string]map[string]struct {
		Responses map[string]struct {
			Content map[string]struct {
				Schema schema `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]schema `json:"schemas"`
	} `json:"components"`
}

type schema struct {
	Ref        string            `json:"$ref"`
	Type       string            `json:"type"`
	Required   []string          `json:"required"`
	Properties map[string]schema `json:"properties"`
	Items      *schema           `json:"items"`
}

func loadSpec(t *testing.T) spec {
	t.Helper()
	var s spec
	require.NoError(t, json.Unmarshal(openAPI, &s))
	return s
}

// resolve follows a $ref.
func (s spec) resolve(sc schema) schema {
	if name, ok := strings.CutPrefix(sc.Ref, "#/components/schemas/"); ok {
		return s.Components.Schemas[name]
	}
	return sc
}

// check validates a decoded JSON value against a schema: types, required
// properties, recursively through objects and arrays.
func (s spec) check(t *testing.T, where string, sc schema, v any) {
	t.Helper()
	sc = s.resolve(sc)
	switch sc.Type {
	case "object":
		obj, ok := v.(map[string]any)
		require.True(t, ok, "%s: want an object, got %T", where, v)
		for _, r := range sc.Required {
			require.Contains(t, obj, r, "%s: required property %q missing", where, r)
		}
		for name, p := range sc.Properties {
			if val, ok := obj[name]; ok && val != nil {
				s.check(t, where+"."+name, p, val)
			}
		}
	case "array":
		arr, ok := v.([]any)
		require.True(t, ok, "%s: want an array, got %T", where, v)
		for i, e := range arr {
			if sc.Items != nil {
				s.check(t, fmt.Sprintf("%s[%d]", where, i), *sc.Items, e)
			}
		}
	case "string":
		_, ok := v.(string)
		require.True(t, ok, "%s: want a string, got %T", where, v)
	case "integer", "number":
		_, ok := v.(float64)
		require.True(t, ok, "%s: want a number, got %T", where, v)
	case "boolean":
		_, ok := v.(bool)
		require.True(t, ok, "%s: want a boolean, got %T", where, v)
	}
}

// TestRoutesMatchOpenAPI checks that every route is documented and every
// documented operation is served.
func TestRoutesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	a := &api{opts: Options{Metrics: metrics.New()}}
	var served []string
	for _, r := range a.routes() {
		served = append(served, r.pattern)
	}
	var documented []string
	for path, ops := range loadSpec(t).Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(served)
	sort.Strings(documented)
	require.Equal(t, documented, served)
}

// The Status schema lists the queue's statuses, in lifecycle order.
func TestOpenAPIStatusesMatchQueue(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas struct {
				Status struct {
					Enum []string `json:"enum"`
				} `json:"Status"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	var want []string
	for _, s := range queue.Statuses {
		want = append(want, string(s))
	}
	require.Equal(t, want, doc.Components.Schemas.Status.Enum)
}

// env is an API over a fresh queue with a task in each interesting state.
type env struct {
	srv   *httptest.Server
	q     *queue.Queue
	raw   store.Store
	spec  spec
	token string
	tasks map[string]*queue.Task
	clock *storetest.Clock
}

func newEnv(t *testing.T, be storetest.Backend, opts Options) *env {
	t.Helper()
	ctx := context.Background()
	raw := be.New(t)
	_, err := queue.Init(ctx, raw, 1)
	require.NoError(t, err)
	// A settable clock: a submit followed at once by a claim must not
	// depend on how precisely the server's time is estimated.
	clock := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	q, err := queue.Open(ctx, raw, queue.Options{Clock: clock})
	require.NoError(t, err)
	e := &env{q: q, raw: raw, spec: loadSpec(t), token: opts.Token, tasks: map[string]*queue.Task{}, clock: clock}
	e.srv = httptest.NewServer(New(q, opts))
	t.Cleanup(e.srv.Close)
	submit := func(name, typ string) *queue.Task {
		task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: typ, Input: json.RawMessage(`{"n":"` + name + `"}`)})
		require.NoError(t, err)
		e.tasks[name] = task
		return task
	}
	claim := func(task *queue.Task) *queue.Lease {
		entry, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		l, err := q.Claim(ctx, entry, "api-test")
		require.NoError(t, err)
		return l
	}
	submit("pending", "email")
	_, err = q.Complete(ctx, claim(submit("done", "email")), json.RawMessage(`{"ok":true}`))
	require.NoError(t, err)
	_, err = q.Fail(ctx, claim(submit("failed", "email")), "boom")
	require.NoError(t, err)
	_, err = q.Fail(ctx, claim(submit("failed2", "resize")), "boom")
	require.NoError(t, err)
	require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: "w1", StartedAt: q.Now(), LastHeartbeat: q.Now(), Concurrency: 2}))
	return e
}

// do sends a request and returns the status and the decoded JSON body.
func (e *env) do(t *testing.T, method, path, body string, hdr ...string) (int, any, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var v any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &v), "body: %s", raw)
	}
	return resp.StatusCode, v, resp.Header
}

// documented checks a response against the OpenAPI document: the status is
// listed for the operation and the body fits its schema.
func (e *env) documented(t *testing.T, method, pattern string, status int, body any) {
	t.Helper()
	op, ok := e.spec.Paths[pattern][strings.ToLower(method)]
	require.True(t, ok, "%s %s is not documented", method, pattern)
	resp, ok := op.Responses[fmt.Sprint(status)]
	require.True(t, ok, "%s %s: status %d is not documented", method, pattern, status)
	if c, ok := resp.Content["application/json"]; ok && body != nil {
		e.spec.check(t, fmt.Sprintf("%s %s %d", method, pattern, status), c.Schema, body)
	}
}

// call is one request of an endpoint table and what it must answer.
type call struct {
	method, path, pattern, body string
	status                      int
	check                       func(t *testing.T, v map[string]any) // nil: the status is enough
}

// calls sends each request in order (later ones see earlier changes) and
// checks its status, its check and the OpenAPI document.
func (e *env) calls(t *testing.T, calls []call) {
	t.Helper()
	for _, c := range calls {
		status, body, _ := e.do(t, c.method, c.path, c.body)
		require.Equal(t, c.status, status, "%s %s %s: %v", c.method, c.path, c.body, body)
		e.documented(t, c.method, c.pattern, status, body)
		if c.check != nil {
			c.check(t, body.(map[string]any))
		}
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{Metrics: metrics.New()})
		id := func(name string) string { return e.tasks[name].ID.String() }
		missing := "00000000-0000-4000-8000-000000000000"
		tests := []struct {
			method, path, pattern, body string
			status                      int
			check                       func(t *testing.T, v map[string]any)
		}{
			{"GET", "/health", "/health", "", 200, nil},
			{"GET", "/health?check=s3", "/health", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, "ok", v["s3"]) }},
			{"GET", "/api/openapi.json", "/api/openapi.json", "", 200, nil},
			{"GET", "/", "/", "", 200, nil},
			{"GET", "/api/stats", "/api/stats", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, 3.0, v["total"], "pending, running and dead letters")
				require.Equal(t, 2.0, v["by_status"].(map[string]any)["failed"])
				require.Equal(t, []any{"waiting", "pending", "running", "failed"}, v["counted"])
				require.Equal(t, 1.0, v["workers"].(map[string]any)["active"])
			}},
			{"GET", "/api/workers", "/api/workers", "", 200, func(t *testing.T, v map[string]any) {
				require.Len(t, v["workers"], 1)
			}},
			{"GET", "/api/tasks", "/api/tasks", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["tasks"], 4) }},
			{"GET", "/api/tasks?status=failed&type=email", "/api/tasks", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["tasks"], 1) }},
			{"GET", "/api/tasks?limit=1", "/api/tasks", "", 200, func(t *testing.T, v map[string]any) {
				require.Len(t, v["tasks"], 1)
				require.NotEmpty(t, v["next_cursor"])
			}},
			{"GET", "/api/tasks?status=sleeping", "/api/tasks", "", 400, nil},
			{"GET", "/api/tasks?limit=0", "/api/tasks", "", 400, nil},
			{"GET", "/api/tasks?shard=zz", "/api/tasks", "", 400, nil},
			{"GET", "/api/tasks?colour=red", "/api/tasks", "", 400, nil},
			{"GET", "/api/tasks?cursor=garbage", "/api/tasks", "", 400, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","input":{"to":"a@b.c"},"max_retries":1}`, 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, "pending", v["status"])
				require.Equal(t, 1.0, v["max_retries"])
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","input":1,"idempotency_key":"k"}`, 201, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","input":1,"idempotency_key":"k"}`, 200, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","input":2,"idempotency_key":"k"}`, 409, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","idempotency_key":"u","unique_while_active":true}`, 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, map[string]any{"while_active": true}, v["unique"])
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","idempotency_key":"u","unique_while_active":true}`, 200, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","unique_for":"1m"}`, 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], `need "idempotency_key"`)
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email",`, 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], "not valid JSON")
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"input":1}`, 400, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"e","priority":9}`, 400, nil},
			{"GET", "/api/tasks/" + id("done"), "/api/tasks/{id}", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, "completed", v["status"]) }},
			{"GET", "/api/tasks/" + missing, "/api/tasks/{id}", "", 404, nil},
			{"GET", "/api/tasks/not-an-id", "/api/tasks/{id}", "", 400, nil},
			// The short id lists show (the end of the id) names the task too.
			{"GET", "/api/tasks/" + queue.ShortID(e.tasks["done"].ID), "/api/tasks/{id}", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, id("done"), v["id"]) }},
			{"GET", "/api/tasks/" + queue.ShortID(e.tasks["done"].ID) + "/history", "/api/tasks/{id}/history", "", 200, func(t *testing.T, v map[string]any) {
				require.Len(t, v["events"], 3)
			}},
			{"GET", "/api/tasks/0000beef", "/api/tasks/{id}", "", 404, nil},
			{"GET", "/api/tasks/" + id("done") + "/history", "/api/tasks/{id}/history", "", 200, func(t *testing.T, v map[string]any) {
				require.Len(t, v["events"], 3)
			}},
			{"GET", "/api/tasks/" + missing + "/history", "/api/tasks/{id}/history", "", 404, nil},
			{"GET", "/api/dead", "/api/dead", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["tasks"], 2) }},
			{"GET", "/api/dead?type=resize", "/api/dead", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["tasks"], 1) }},
			{"POST", "/api/dead/" + id("done") + "/retry", "/api/dead/{id}/retry", "", 409, nil},
			{"POST", "/api/dead/" + id("failed") + "/retry", "/api/dead/{id}/retry", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, "pending", v["status"]) }},
			{"POST", "/api/dead/" + missing + "/retry", "/api/dead/{id}/retry", "", 404, nil},
			{"DELETE", "/api/dead/" + id("failed2"), "/api/dead/{id}", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, "archived", v["status"]) }},
			{"DELETE", "/api/dead/" + id("pending"), "/api/dead/{id}", "", 409, nil},
			{"POST", "/api/tasks/" + id("done") + "/cancel", "/api/tasks/{id}/cancel", "", 409, nil},
			{"POST", "/api/tasks/" + id("pending") + "/cancel", "/api/tasks/{id}/cancel", `{"reason":"not needed"}`, 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, "cancelled", v["status"])
				require.Equal(t, "not needed", v["cancel_reason"])
			}},
			{"POST", "/api/tasks/" + id("pending") + "/cancel", "/api/tasks/{id}/cancel", `{"why":1}`, 400, nil},
			{"GET", "/metrics", "/metrics", "", 200, nil},
		}
		// Run in order: later cases see earlier changes.
		for _, tt := range tests {
			status, body, _ := e.do(t, tt.method, tt.path, tt.body)
			require.Equal(t, tt.status, status, "%s %s %s: %v", tt.method, tt.path, tt.body, body)
			e.documented(t, tt.method, tt.pattern, status, body)
			if status >= 400 {
				e.documented(t, tt.method, tt.pattern, status, body) // errors are Error objects
				e.spec.check(t, tt.path, schema{Ref: "#/components/schemas/Error"}, body)
			}
			if tt.check != nil {
				tt.check(t, body.(map[string]any))
			}
		}
		status, body, _ := e.do(t, "GET", "/api/nowhere", "")
		require.Equal(t, 404, status)
		require.Contains(t, body.(map[string]any)["error"].(map[string]any)["message"], "/api/openapi.json")
	})
}

// Priorities, expiry and large inputs on submit, and replay and archive of
// any task whose state allows them.
func TestSubmitOptionsAndTaskActions(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		ctx := context.Background()
		// An expired task: not started before its deadline.
		exp, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "email", ExpiresAt: e.q.Now().Add(time.Second)})
		require.NoError(t, err)
		e.clock.Advance(2 * time.Second)
		_, _, err = e.q.Recovery().Sweep(ctx, "", 0, 0)
		require.NoError(t, err)
		expPath := "/api/tasks/" + exp.ID.String()
		big := `{"blob":"` + strings.Repeat("x", queue.DefaultOffloadThreshold) + `"}`
		var bigID string
		e.calls(t, []call{
			// Priorities and expiry on submit.
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","priority":"high","expires_in":"10m"}`, 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, "high", v["priority"])
				require.NotNil(t, v["expires_at"])
			}},
			// Metadata on submit, returned with the task.
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","metadata":{"tenant":"acme","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`, 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, map[string]any{"tenant": "acme", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, v["metadata"])
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","metadata":{"a/b":"x"}}`, 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], `metadata key "a/b"`)
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","priority":"urgent"}`, 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], "high, normal, low")
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","expires_in":"1m","expires_at":"2030-01-01T00:00:00Z"}`, 400, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","delay":"1h","expires_at":"2000-01-01T00:00:00Z"}`, 400, nil},
			{"GET", "/api/tasks?status=expired", "/api/tasks", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["tasks"], 1) }},
			{"POST", expPath + "/replay", "/api/tasks/{id}/replay", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, "pending", v["status"])
				require.Nil(t, v["expires_at"], "the passed deadline is cleared")
			}},
			{"POST", expPath + "/archive", "/api/tasks/{id}/archive", "", 409, nil},
			{"POST", "/api/tasks/" + e.tasks["failed"].ID.String() + "/archive", "/api/tasks/{id}/archive", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, "archived", v["status"])
			}},
			{"POST", "/api/tasks/" + e.tasks["done"].ID.String() + "/replay", "/api/tasks/{id}/replay", "", 409, nil},
			{"POST", "/api/tasks/nope/archive", "/api/tasks/{id}/archive", "", 400, nil},
			// A payload over the threshold: stored apart, returned whole.
			{"POST", "/api/tasks", "/api/tasks", `{"type":"big","input":` + big + `}`, 201, func(t *testing.T, v map[string]any) {
				require.Nil(t, v["input"])
				require.NotNil(t, v["input_ref"])
				bigID = v["id"].(string)
			}},
		})

		status, body, _ := e.do(t, "GET", "/api/tasks/"+bigID, "")
		require.Equal(t, 200, status)
		e.documented(t, "GET", "/api/tasks/{id}", status, body)
		v := body.(map[string]any)
		require.Equal(t, strings.Repeat("x", queue.DefaultOffloadThreshold), v["input"].(map[string]any)["blob"], "the offloaded input is loaded")
		require.NotNil(t, v["input_ref"])
	})
}

func TestAuthAndLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{Token: "s3cret", MaxBody: 2048, Metrics: metrics.New()})
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		auth   string
		status int
	}{
		{"health needs no token", "GET", "/health", "", "-", 200},
		{"missing token", "GET", "/api/stats", "", "-", 401},
		{"wrong token", "GET", "/api/stats", "", "Bearer nope", 401},
		{"wrong scheme", "GET", "/api/stats", "", "Basic s3cret", 401},
		{"right token", "GET", "/api/stats", "", "Bearer s3cret", 200},
		{"openapi needs the token", "GET", "/api/openapi.json", "", "-", 401},
		{"metrics need the token", "GET", "/metrics", "", "-", 401},
		{"metrics with the token", "GET", "/metrics", "", "Bearer s3cret", 200},
		{"body over the limit", "POST", "/api/tasks", `{"type":"e","input":"` + strings.Repeat("x", 4096) + `"}`, "Bearer s3cret", 413},
		{"body under the limit", "POST", "/api/tasks", `{"type":"e","input":"` + strings.Repeat("x", 1024) + `"}`, "Bearer s3cret", 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, e.srv.URL+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if tt.auth != "-" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tt.status, resp.StatusCode)
			if tt.status == 401 {
				require.Equal(t, `Bearer realm="qo"`, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestMalformedObjects puts broken objects in the bucket: listings and
// stats still answer and report them.
func TestMalformedObjects(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		ctx := context.Background()
		_, err := e.raw.Put(ctx, e.q.TaskKey(queue.NewIDAt(e.q.Now())), []byte(`{"format":1,"id":`), store.Condition{})
		require.NoError(t, err)
		_, err = e.raw.Put(ctx, "workers/broken.json", []byte(`nope`), store.Condition{})
		require.NoError(t, err)
		status, body, _ := e.do(t, "GET", "/api/stats", "")
		require.Equal(t, 200, status)
		require.Len(t, body.(map[string]any)["malformed"], 1)
		status, body, _ = e.do(t, "GET", "/api/tasks?status=completed", "")
		require.Equal(t, 200, status)
		require.Len(t, body.(map[string]any)["malformed"], 1)
		status, _, _ = e.do(t, "GET", "/api/workers", "")
		require.Equal(t, 200, status)
	})
}

// downStore fails every read, as an S3 outage does.
type downStore struct{ store.Store }

func (d downStore) List(context.Context, store.ListParams) (store.ListPage, error) {
	return store.ListPage{}, fmt.Errorf("list: %w: %w", store.ErrUnreachable, errors.New("connection refused"))
}

func TestOutageIs503(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{})
	q, err := queue.Open(context.Background(), downStore{e.raw}, queue.Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(New(q, Options{}))
	defer srv.Close()
	for _, path := range []string{"/api/stats", "/api/tasks", "/api/workers"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		var body Error
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		require.Equal(t, 503, resp.StatusCode, path)
		require.Equal(t, "storage_unavailable", body.Error.Code)
	}
}

// TestCORS checks the preflight and the header when an origin is allowed.
func TestCORS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{AllowOrigin: "https://ops.example.com"})
	req, _ := http.NewRequest("OPTIONS", e.srv.URL+"/api/tasks", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 204, resp.StatusCode)
	require.Equal(t, "https://ops.example.com", resp.Header.Get("Access-Control-Allow-Origin"))
	_, _, hdr := e.do(t, "GET", "/api/stats", "")
	require.Equal(t, "https://ops.example.com", hdr.Get("Access-Control-Allow-Origin"))
}

// TestCrossSiteWrites: a page on another site cannot change the queue
// through a browser (no-cors fetch or a form), nor read it through a DNS
// name rebound to the server; the server's own page, scripts and an
// allowed origin can.
func TestCrossSiteWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{AllowedHosts: []string{"localhost", "127.0.0.1", "::1"}, AllowOrigin: "https://ops.example.com"})
	self := e.srv.URL // http://127.0.0.1:PORT
	host := strings.TrimPrefix(self, "http://")
	submit := `{"type":"evil","input":{}}`
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		hdr    []string
		status int
	}{
		{"no-cors fetch from another site, text/plain", "POST", "/api/tasks", submit,
			[]string{"Content-Type", "text/plain;charset=UTF-8", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, 403},
		{"another site, even with JSON", "POST", "/api/tasks", submit,
			[]string{"Content-Type", "application/json", "Origin", "https://evil.example"}, 403},
		{"another local port is another origin", "POST", "/api/pause", `{}`,
			[]string{"Content-Type", "application/json", "Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site"}, 403},
		{"an opaque origin", "POST", "/api/tasks/" + "00000000-0000-7000-8000-000000000000" + "/cancel", "",
			[]string{"Origin", "null"}, 403},
		{"form post without an origin header but cross-site", "POST", "/api/resume", "",
			[]string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"a script posting text/plain", "POST", "/api/tasks", submit,
			[]string{"Content-Type", "text/plain"}, 415},
		{"a form post", "POST", "/api/tasks", "type=evil",
			[]string{"Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"the server's own page", "POST", "/api/tasks", submit,
			[]string{"Content-Type", "application/json", "Origin", self, "Sec-Fetch-Site", "same-origin"}, 201},
		{"a script (no browser headers)", "POST", "/api/tasks", submit,
			[]string{"Content-Type", "application/json; charset=utf-8"}, 201},
		{"the allowed origin", "POST", "/api/tasks", submit,
			[]string{"Content-Type", "application/json", "Origin", "https://ops.example.com", "Sec-Fetch-Site", "cross-site"}, 201},
		{"a rebound DNS name, read", "GET", "/api/stats", "", []string{"Host", "evil.example:" + strings.Split(host, ":")[1]}, 421},
		{"a rebound DNS name, write", "POST", "/api/tasks", submit, []string{"Host", "evil.example", "Content-Type", "application/json"}, 421},
		{"localhost", "GET", "/api/stats", "", []string{"Host", "localhost:" + strings.Split(host, ":")[1]}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, self+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				if tt.hdr[i] == "Host" {
					req.Host = tt.hdr[i+1]
				} else {
					req.Header.Set(tt.hdr[i], tt.hdr[i+1])
				}
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			require.Equal(t, tt.status, resp.StatusCode, "%s", raw)
		})
	}
	// Nothing the refused requests carried reached the bucket.
	page, err := e.q.List(context.Background(), queue.ListQuery{Type: "evil", Status: queue.StatusPending})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 3, "only the three allowed submits")
}

// TestStatsRefreshBounded: stats answers are reused for StatsMaxAge and
// concurrent requests share one refresh, so no stream of requests makes
// the API read more than one refresh's worth per StatsMaxAge.
func TestStatsRefreshBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{StatsMaxAge: 5 * time.Second})
	counted := e.raw.(store.Counted).Requests()
	status, _, _ := e.do(t, "GET", "/api/stats", "")
	require.Equal(t, 200, status)
	before := counted.Snapshot()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, _ := e.do(t, "GET", "/api/stats", "")
			require.Equal(t, 200, status)
		}()
	}
	wg.Wait()
	require.Zero(t, sum(counted.Snapshot().Sub(before)), "answers younger than StatsMaxAge are reused")

	e.clock.Advance(5 * time.Second)
	before = counted.Snapshot()
	status, _, _ = e.do(t, "GET", "/api/stats", "")
	require.Equal(t, 200, status)
	one := sum(counted.Snapshot().Sub(before))
	require.Positive(t, one, "an older answer is refreshed")
	before = counted.Snapshot()
	for range 10 {
		status, _, _ = e.do(t, "GET", "/api/stats", "")
		require.Equal(t, 200, status)
	}
	require.Zero(t, sum(counted.Snapshot().Sub(before)))
}

// sum is the number of requests in c.
func sum(c store.Counts) (n int64) {
	for _, op := range store.Ops {
		n += c.Total(op)
	}
	return n
}

// TestReadOnly: a read-only server answers reads and refuses every write
// with 403 read_only, changing nothing.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{ReadOnly: true})
	id := e.tasks["pending"].ID.String()
	status, _, hdr := e.do(t, "GET", "/api/tasks/"+id, "")
	require.Equal(t, 200, status)
	require.Equal(t, "true", hdr.Get("X-Qo-Read-Only"), "the web UI learns it offers no write")
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/tasks/" + id + "/cancel", ""},
		{"POST", "/api/tasks", `{"type":"email"}`},
		{"POST", "/api/pause", `{}`},
		{"DELETE", "/api/dead/" + e.tasks["failed"].ID.String(), ""},
	} {
		status, body, _ := e.do(t, c.method, c.path, c.body)
		require.Equal(t, 403, status, "%s %s", c.method, c.path)
		require.Equal(t, "read_only", body.(map[string]any)["error"].(map[string]any)["code"])
	}
	got, err := e.q.Get(context.Background(), e.tasks["pending"].ID)
	require.NoError(t, err)
	require.Equal(t, queue.StatusPending, got.Status, "nothing changed")
}

// TestSubmitRefusedByHook: a submit hook's refusal is a 422 that says so,
// not a 500, and nothing is written.
func TestSubmitRefusedByHook(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{})
	e.q.OnSubmit(queue.SubmitHook{Before: func(ctx context.Context, req *queue.SubmitRequest) (context.Context, error) {
		return nil, errors.New("type email is closed for the night")
	}})
	status, body, _ := e.do(t, "POST", "/api/tasks", `{"type":"email"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	errBody := body.(map[string]any)["error"].(map[string]any)
	require.Equal(t, "submit_refused", errBody["code"])
	require.Contains(t, errBody["message"], "closed for the night")
	e.documented(t, "POST", "/api/tasks", status, body)
}
